"""``mz-jax suite``: suites and suite files, per-entry configurations, results.json, resuming."""

import json
import os
import re
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest
from _tiny import CARTPOLE, NUM_SEEDS

from mz_jax.cli import main as cli
from mz_jax.config.presets import load_preset
from mz_jax.run import resume as resume_lib
from mz_jax.run.metrics import EVAL_RETURN
from mz_jax.suite import opponent as suite_opponent
from mz_jax.suite import runner as suite
from mz_jax.suite.runner import SUITES, SuiteEntry, entry_config, load_suite
from mz_jax.training.evaluate import EvalResult

TINY = {
    "num_envs": 4,
    "rollout_length": 4,
    "batch_size": 8,
    "updates_per_iteration": 1,
    "num_unroll_steps": 3,
    "td_steps": 3,
    "replay_capacity": 400,
    "eval_every_env_steps": 32,
    "eval_episodes": 4,
    "log_every_seconds": 1000.0,
    "network.hidden_sizes": [16],
    "network.latent_size": 8,
    "search.num_simulations": 4,
}
TINY_CARTPOLE = {**CARTPOLE, "log_every_seconds": 1000.0}


def _toml_value(value):
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _write_suite(path, entries):
    lines = []
    for env, preset, overrides in entries:
        lines += ["[[environment]]", f"env = {json.dumps(env)}"]
        if preset is not None:
            lines.append(f"preset = {json.dumps(preset)}")
        items = ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in overrides.items())
        lines.append(f"overrides = {{ {items} }}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_built_in_suites_have_valid_configurations():
    assert set(SUITES) == {"classic", "minatar", "board"}
    for name, entries in SUITES.items():
        assert load_suite(name) == entries
        for entry in entries:
            config = entry_config(entry, num_seeds=5, seed=10)
            assert config.env == entry.env
            assert (config.num_seeds, config.seed) == (5, 10)
            assert config.total_env_steps and config.eval_every_env_steps
    freeway = entry_config(
        SuiteEntry(
            "gymnax:Freeway-MinAtar",
            **{"preset": "breakout_minatar", "overrides": {"eval_max_steps": 2_500}},
        ),
        num_seeds=1,
    )
    assert freeway.network.kind == "resnet" and freeway.eval_max_steps == 2_500
    # The built-in minatar suite trains the MLP, which runs on a CPU.
    assert all(entry_config(e, num_seeds=1).network.kind == "mlp" for e in SUITES["minatar"])


def test_suite_file_overrides_nested_fields(tmp_path):
    path = _write_suite(
        tmp_path / "s.toml",
        [
            (
                "gymnax:Acrobot-v1",
                "cartpole",
                {"search.num_simulations": 3, "network.hidden_sizes": [8, 8]},
            )
        ],
    )
    (entry,) = load_suite(path)
    config = entry_config(entry, num_seeds=2, env_steps=1_000)
    assert config.env == "gymnax:Acrobot-v1"
    assert config.search.num_simulations == 3
    assert config.network.hidden_sizes == (8, 8)
    assert config.total_env_steps == 1_000
    assert config.discount == load_preset("cartpole").discount  # the preset's, kept


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[environment]]\npreset = 'cartpole'\n", "needs 'env'"),
        ("[[environment]]\nenv = 'gymnax:CartPole-v1'\ncolour = 1\n", "unknown key.*colour"),
        ("title = 'no environments'\n", "expected a list 'environment'"),
        (
            "[[environment]]\nenv = 'gymnax:CartPole-v1'\n[[environment]]\nenv = 'gymnax:CartPole-v1'\n",
            "listed twice: gymnax:CartPole-v1",
        ),
        ("[[environment\n", "cannot be read"),
    ],
)
def test_bad_suite_files_are_refused(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_suite(path)


def test_unknown_suites_and_fields_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown suite; allowed board, classic, minatar"):
        load_suite("atari")
    with pytest.raises(ValueError, match="no such file"):
        load_suite(tmp_path / "missing.toml")
    entry = SuiteEntry("gymnax:CartPole-v1", "cartpole", {"search.num_simulation": 3})
    with pytest.raises(ValueError, match=r"unknown config field.*num_simulation"):
        entry_config(entry, num_seeds=1)
    entry = SuiteEntry("gymnax:CartPole-v1", "cartpole", {"nonsense.field": 3})
    with pytest.raises(ValueError, match=r"unknown config field 'nonsense\.field'"):
        entry_config(entry, num_seeds=1)
    entry = SuiteEntry("gymnax:CartPole-v1", None, {"total_env_steps": None})
    with pytest.raises(ValueError, match="'total_env_steps' is None"):
        entry_config(entry, num_seeds=1)
    entry = SuiteEntry("gymnax:CartPole-v1", None, {"eval_every_env_steps": 0})
    with pytest.raises(ValueError, match="'eval_every_env_steps' = 0"):
        entry_config(entry, num_seeds=1)
    # The suite decides these; an override would otherwise be silently replaced.
    entry = SuiteEntry("gymnax:CartPole-v1", "cartpole", {"seed": 3, "num_seeds": 2})
    with pytest.raises(ValueError, match=r"may not set 'num_seeds', 'seed'.*--seeds"):
        entry_config(entry, num_seeds=1)
    with pytest.raises(SystemExit):
        cli.main(["suite", "--suite", "classic", "--seeds", "0", "--workdir", str(tmp_path)])


def _evaluations(metrics_path):
    """seed -> [(env_steps, return)] read straight from the file."""
    found = {}
    for line in metrics_path.read_text().splitlines():
        record = json.loads(line)
        if EVAL_RETURN in record:
            found.setdefault(record["seed"], {})[record["env_steps"]] = record[EVAL_RETURN]
    return {seed: sorted(points.items()) for seed, points in found.items()}


def test_suite_runs_every_environment_with_its_seeds_and_resumes(tmp_path, capsys):
    # CartPole is the run tests/test_seeds.py trains (tests/_tiny.py): the same programs.
    suite = _write_suite(
        tmp_path / "tiny.toml",
        [
            ("gymnax:CartPole-v1", None, TINY_CARTPOLE),
            ("gymnax:Catch-bsuite", "catch", {**TINY, "eval_max_steps": 20}),
        ],
    )
    workdir = tmp_path / "runs"
    argv = [
        "suite",
        "--suite",
        str(suite),
        "--seeds",
        str(NUM_SEEDS),
        "--seed",
        "7",
        "--workdir",
        str(workdir),
    ]
    assert cli.main([*argv, "--env-steps", "64"]) == 0
    results = json.loads((workdir / "results.json").read_text())
    assert results["seeds"] == [7, 8, 9]
    assert list(results["environments"]) == ["gymnax:CartPole-v1", "gymnax:Catch-bsuite"]
    for record in results["environments"].values():
        assert record["done"] and record["env_steps"] == 64
        evaluations = _evaluations(workdir / record["workdir"] / "metrics.jsonl")
        assert sorted(evaluations) == [7, 8, 9]
        for row in record["seeds"]:
            points = evaluations[row["seed"]]
            assert [steps for steps, _ in points] == [32, 64]
            assert row["final_return"] == points[-1][1]
            assert row["best_return"] == max(value for _, value in points)
            assert row["env_steps"] == 64
    report = (workdir / "report.md").read_text()
    assert "gymnax:CartPole-v1" in report and "Aggregate scores" in report
    assert (workdir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Finished environments are not run again; an unfinished one is (and is then done).
    cartpole_metrics = workdir / "gymnax_CartPole-v1" / "metrics.jsonl"
    before = (cartpole_metrics.read_text(), os.stat(cartpole_metrics).st_mtime_ns)
    results["environments"]["gymnax:Catch-bsuite"]["done"] = False
    (workdir / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    assert cli.main([*argv, "--env-steps", "64"]) == 0
    out = capsys.readouterr().out
    assert "gymnax:CartPole-v1: done before, not run again" in out
    assert "[2/2] gymnax:Catch-bsuite: preset catch" in out
    assert (cartpole_metrics.read_text(), os.stat(cartpole_metrics).st_mtime_ns) == before
    assert json.loads((workdir / "results.json").read_text())["environments"][
        "gymnax:Catch-bsuite"
    ]["done"]

    # Other settings in the same workdir are refused, naming them.
    with pytest.raises(SystemExit):
        cli.main([*argv, "--env-steps", "128"])
    assert "env_steps: 64 -> 128" in capsys.readouterr().err

    # A finished environment whose configuration changed since (a preset changed) is refused, not
    # reported with the old run's results; a bookkeeping field alone changes nothing.
    _write_suite(
        suite,
        [
            ("gymnax:CartPole-v1", None, {**TINY_CARTPOLE, "td_steps": 2}),
            ("gymnax:Catch-bsuite", "catch", {**TINY, "eval_max_steps": 20}),
        ],
    )
    with pytest.raises(SystemExit):
        cli.main([*argv, "--env-steps", "64"])
    err = capsys.readouterr().err
    assert "gymnax:CartPole-v1 was run with another configuration" in err
    assert "td_steps: 3 -> 2" in err
    _write_suite(
        suite,
        [
            ("gymnax:CartPole-v1", None, {**TINY_CARTPOLE, "log_every_seconds": 500.0}),
            ("gymnax:Catch-bsuite", "catch", {**TINY, "eval_max_steps": 20}),
        ],
    )
    assert cli.main([*argv, "--env-steps", "64"]) == 0
    assert "gymnax:CartPole-v1: done before, not run again" in capsys.readouterr().out

    # An export (no checkpoints) resumes the suite elsewhere: the finished environments are
    # reported, not trained again, and an environment left out is trained there.
    exported = tmp_path / "exported"
    assert cli.main(["report", str(workdir), "--export", str(exported)]) == 0
    assert not list(exported.rglob("checkpoints"))
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(exported, elsewhere)
    results = json.loads((elsewhere / "results.json").read_text())
    del results["environments"]["gymnax:Catch-bsuite"]
    (elsewhere / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    resumed = [a if a != str(workdir) else str(elsewhere) for a in argv]
    assert cli.main([*resumed, "--env-steps", "64"]) == 0
    out = capsys.readouterr().out
    assert "gymnax:CartPole-v1: done before, not run again" in out
    assert "[2/2] gymnax:Catch-bsuite: preset catch" in out
    assert (elsewhere / "gymnax_CartPole-v1" / "metrics.jsonl").read_bytes() == (
        workdir / "gymnax_CartPole-v1" / "metrics.jsonl"
    ).read_bytes()
    results = json.loads((elsewhere / "results.json").read_text())
    assert [r["done"] for r in results["environments"].values()] == [True, True]
    # Catch trained from the start there: the exported records it found were dropped, not doubled.
    lines = (elsewhere / "gymnax_Catch-bsuite" / "metrics.jsonl").read_text().splitlines()
    steps = sorted(r["env_steps"] for r in map(json.loads, lines) if EVAL_RETURN in r)
    assert steps == [32] * NUM_SEEDS + [64] * NUM_SEEDS


def test_the_documented_suite_file_is_valid(tmp_path):
    guide = (Path(__file__).parent.parent / "docs" / "suites.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", guide, flags=re.S)
    path = tmp_path / "suite.toml"
    path.write_text(block)
    entries = load_suite(path)
    assert [entry.env for entry in entries] == [
        "gymnax:CartPole-v1",
        "gymnax:Acrobot-v1",
        "pgx:tic_tac_toe",
    ]
    acrobot = entry_config(entries[1], num_seeds=3)
    assert (acrobot.eval_max_steps, acrobot.search.num_simulations) == (500, 8)
    assert (entries[2].opponent, entries[2].opponent_episodes) == ("mcts:1000", 200)


def test_the_stochastic_suite_file_trains_each_game_with_its_preset():
    path = Path(__file__).parent.parent / "benchmarks" / "suites" / "stochastic.toml"
    entries = load_suite(path)
    assert [(entry.env, entry.preset) for entry in entries] == [
        ("pgx:2048", "game_2048"),
        ("pgx:backgammon", "backgammon"),
    ]
    for entry in entries:
        suite_opponent.check_opponent(entry)
        config = entry_config(entry, num_seeds=3)
        assert config.env == entry.env and config.network.num_chance_outcomes == 32
    # The backgammon target is over 500 games against the random player, both seats.
    assert (entries[1].opponent, entries[1].opponent_episodes) == ("random", 500)


def test_the_minatar_resnet_suite_file_trains_every_minatar_game_with_the_resnet_preset():
    path = Path(__file__).parent.parent / "benchmarks" / "suites" / "minatar_resnet.toml"
    entries = load_suite(path)
    games = ["Asterix", "Breakout", "Freeway", "SpaceInvaders"]
    assert [entry.env for entry in entries] == [f"gymnax:{game}-MinAtar" for game in games]
    for entry in entries:
        config = entry_config(entry, num_seeds=3)
        assert entry.preset == "breakout_minatar" and config.network.kind == "resnet"
        # The GPU runs' settings; Freeway's episodes last 2,500 steps.
        assert config.unroll_learner is False
        assert (config.eval_every_env_steps, config.eval_episodes) == (250_000, 16)
        assert config.eval_max_steps == 2_500
        assert config.total_env_steps == 1_000_000


# ---------------------------------------------------------------------------------------------------
# Opponents: board games play one after training (suite_opponent.play_opponent).


def _opponent_suite(path, entries):
    """A suite file of (env, opponent lines) entries, each with the tic-tac-toe preset."""
    lines = []
    for env, extra in entries:
        lines += ["[[environment]]", f"env = {json.dumps(env)}", 'preset = "tic_tac_toe"', *extra]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_suite_file_opponent_keys(tmp_path):
    path = _opponent_suite(
        tmp_path / "s.toml",
        [
            ("pgx:tic_tac_toe", ['opponent = "mcts:1000"', "opponent_episodes = 6"]),
            ("pgx:connect_four", ['opponent = "random"']),
            ("gymnax:CartPole-v1", []),
        ],
    )
    ttt, c4, cartpole = load_suite(path)
    assert (ttt.opponent, ttt.opponent_episodes) == ("mcts:1000", 6)
    assert (c4.opponent, c4.opponent_episodes) == ("random", 200)  # the default number of games
    assert cartpole.opponent is None
    json_path = tmp_path / "s.json"
    json_path.write_text(
        json.dumps({"environment": [{"env": "pgx:connect_four", "opponent": "mcts:3"}]})
    )
    assert load_suite(json_path) == (
        SuiteEntry("pgx:connect_four", None, {}, opponent="mcts:3", opponent_episodes=200),
    )
    # The built-in board suite: the targets.
    board = {entry.env: (entry.opponent, entry.opponent_episodes) for entry in SUITES["board"]}
    assert board == {"pgx:tic_tac_toe": ("mcts:1000", 200), "pgx:connect_four": ("mcts:200", 200)}
    assert all(entry.opponent is None for entry in SUITES["classic"] + SUITES["minatar"])


@pytest.mark.parametrize(
    ("env", "extra", "message"),
    [
        (
            "pgx:tic_tac_toe",
            ['opponent = "alphazero"'],
            r"environment 0: 'opponent' = 'alphazero' is invalid: allowed 'random' or 'mcts:N'",
        ),
        ("pgx:tic_tac_toe", ['opponent = "mcts:0"'], r"'opponent' = 'mcts:0' is invalid"),
        ("pgx:tic_tac_toe", ["opponent = 3"], r"'opponent' = 3 is invalid"),
        (
            "gymnax:CartPole-v1",
            ['opponent = "random"'],
            r"'opponent' = 'random': gymnax:CartPole-v1 is a single-player environment",
        ),
        (
            "gymnax:CartPole-v1",
            ['opponent = "mcts:10"'],
            r"'opponent' = 'mcts:10': gymnax:CartPole-v1 is a single-player environment",
        ),
        (
            "pgx:tic_tac_toe",
            ['opponent = "random"', "opponent_episodes = 1"],
            r"'opponent_episodes' = 1 is invalid: allowed an integer >= 2",
        ),
        (
            "pgx:tic_tac_toe",
            ['opponent = "random"', "opponent_episodes = 2.5"],
            r"'opponent_episodes' = 2\.5 is invalid: allowed an integer >= 2",
        ),
        (
            "pgx:tic_tac_toe",
            ['opponent = "random"', "opponent_episodes = true"],
            r"'opponent_episodes' = True is invalid",
        ),
        (
            "pgx:tic_tac_toe",
            ["opponent_episodes = 10"],
            r"'opponent_episodes' = 10 without an 'opponent'",
        ),
        (
            "pgx:tic_tac_toe",
            ['oponent = "random"'],
            r"unknown key\(s\) oponent; allowed env, preset, overrides, opponent, opponent_episodes",
        ),
    ],
)
def test_bad_opponents_are_refused(tmp_path, env, extra, message):
    path = _opponent_suite(tmp_path / "bad.toml", [(env, extra)])
    with pytest.raises(ValueError, match=message):
        load_suite(path)


def test_bad_opponents_are_refused_before_training(tmp_path, monkeypatch):
    # Entries made in code (as the built-in suites are) are checked by entry_config.
    with pytest.raises(ValueError, match=r"^gymnax:Catch-bsuite: 'opponent' = 'random': .*single"):
        entry_config(SuiteEntry("gymnax:Catch-bsuite", "catch", opponent="random"), num_seeds=1)
    entry = SuiteEntry("pgx:tic_tac_toe", "tic_tac_toe", opponent="mcts:5", opponent_episodes=0)
    with pytest.raises(ValueError, match=r"'opponent_episodes' = 0 is invalid"):
        entry_config(entry, num_seeds=1)
    # run_suite refuses a bad second entry before training the first.
    monkeypatch.setattr(suite, "run_training", _fail_if_called)
    bad = SuiteEntry("pgx:connect_four", opponent="mcts:x")
    monkeypatch.setitem(suite.SUITES, "bad", (SuiteEntry("pgx:tic_tac_toe", "tic_tac_toe"), bad))
    with pytest.raises(ValueError, match=r"pgx:connect_four: 'opponent' = 'mcts:x' is invalid"):
        suite.run_suite("bad", tmp_path / "runs", num_seeds=1, env_steps=64, report=False)
    assert not (tmp_path / "runs").exists()


def _fail_if_called(*args, **kwargs):
    raise AssertionError("not expected to be called")


# The games each fake agent plays, (environment workdir, seed index) -> (returns, completed). Of 5
# games the agent moves first in the first 3.
GAMES = {
    ("pgx_tic_tac_toe", 0): ([1, 0, -1, 1, 1], [True] * 5),
    ("pgx_tic_tac_toe", 1): ([1, 1, 1, -1, 0], [True, True, False, True, True]),
    ("pgx_connect_four", 0): ([-1, -1, 1, 1], [True] * 4),
    ("pgx_connect_four", 1): ([0, 1, 0, 0], [True] * 4),
}


def _counts(wins, draws, losses, unfinished=0):
    return {"wins": wins, "draws": draws, "losses": losses, "unfinished": unfinished}


# Counted by hand from GAMES: (total, moving first, moving second).
EXPECTED = {
    ("pgx_tic_tac_toe", 0): (_counts(3, 1, 1), _counts(1, 1, 1), _counts(2, 0, 0)),
    ("pgx_tic_tac_toe", 1): (_counts(2, 1, 1, 1), _counts(2, 0, 0, 1), _counts(0, 1, 1)),
    ("pgx_connect_four", 0): (_counts(2, 0, 2), _counts(0, 0, 2), _counts(2, 0, 0)),
    ("pgx_connect_four", 1): (_counts(1, 3, 0), _counts(1, 1, 0), _counts(0, 2, 0)),
}


class _FakeSuiteRun:
    """Fake training (the summary of a finished run) and fake agents playing GAMES; records calls."""

    def __init__(self, monkeypatch):
        self.trained, self.restored, self.played = [], [], []
        self.interrupt_at = None  # (environment workdir, seed index) whose restore is "killed"
        run = self

        def run_training(config, workdir, *, allow_config_change=False):
            run.trained.append(config.env)
            Path(workdir).mkdir(parents=True, exist_ok=True)
            resume_lib.check_config(Path(workdir), config, allow_config_change=allow_config_change)
            return {"stopped_by_signal": False, "env_steps": config.total_env_steps, "wall_s": 2.0}

        class Agent:
            @classmethod
            def restore(cls, workdir, *, seed_index=0):
                key = (Path(workdir).name, seed_index)
                if key == run.interrupt_at:
                    raise KeyboardInterrupt
                run.restored.append(key)
                agent = cls()
                agent.key = key
                return agent

            def evaluate(self, key, *, num_episodes, max_steps=None, opponent=None):
                returns, completed = GAMES[self.key]
                run.played.append(
                    (
                        *self.key,
                        int(jax.random.key_data(key)[-1]),
                        num_episodes,
                        max_steps,
                        opponent,
                    )
                )
                return EvalResult(
                    episode_return=np.asarray(returns, np.float32),
                    episode_length=np.full(len(returns), 5, np.int32),
                    completed=np.asarray(completed),
                )

        monkeypatch.setattr(suite, "run_training", run_training)
        monkeypatch.setattr(suite_opponent, "Agent", Agent)


def _board_suite(tmp_path, c4_opponent="random", c4_games=4):
    return _opponent_suite(
        tmp_path / "board.toml",
        [
            (
                "pgx:tic_tac_toe",
                [
                    'opponent = "mcts:7"',
                    "opponent_episodes = 5",
                    "overrides = { eval_max_steps = 8 }",
                ],
            ),
            ("gymnax:CartPole-v1", []),
            (
                "pgx:connect_four",
                [f'opponent = "{c4_opponent}"', f"opponent_episodes = {c4_games}"],
            ),
        ],
    )


def _opponent_rows(workdir):
    results = json.loads((workdir / "results.json").read_text())
    return {
        (record["workdir"], index): row.get("opponent")
        for record in results["environments"].values()
        for index, row in enumerate(record["seeds"])
    }


def test_suite_plays_the_opponent_after_training(tmp_path, monkeypatch, capsys):
    fake = _FakeSuiteRun(monkeypatch)
    workdir = tmp_path / "runs"
    suite.run_suite(_board_suite(tmp_path), workdir, num_seeds=2, seed=7, env_steps=64)
    assert fake.trained == ["pgx:tic_tac_toe", "gymnax:CartPole-v1", "pgx:connect_four"]
    # Each seed's agent, its own key (the seed), the entry's games and opponent, the run's
    # eval_max_steps (the override for tic-tac-toe, the preset's 9 for connect four).
    assert fake.played == [
        ("pgx_tic_tac_toe", 0, 7, 5, 8, "mcts:7"),
        ("pgx_tic_tac_toe", 1, 8, 5, 8, "mcts:7"),
        ("pgx_connect_four", 0, 7, 4, 9, "random"),
        ("pgx_connect_four", 1, 8, 4, 9, "random"),
    ]
    rows = _opponent_rows(workdir)
    assert rows[("gymnax_CartPole-v1", 0)] is None and rows[("gymnax_CartPole-v1", 1)] is None
    for key, (total, first, second) in EXPECTED.items():
        name, episodes, max_steps = ("mcts:7", 5, 8) if "tic" in key[0] else ("random", 4, 9)
        assert rows[key] == {
            "name": name,
            "episodes": episodes,
            "max_steps": max_steps,
            "total": total,
            "moving_first": first,
            "moving_second": second,
        }, key
    out = capsys.readouterr().out
    assert "[1/3] pgx:tic_tac_toe: 2 seed(s) against mcts:7, 5 games each" in out
    assert (
        "[1/3] pgx:tic_tac_toe: seed 8: total 2 / 1 / 1 (1 unfinished), moving first 2 / 0 / 0 "
        "(1 unfinished), moving second 0 / 1 / 1" in out
    )
    assert "pgx:connect_four: seed 7: total 2 / 0 / 2, moving first 0 / 0 / 2, moving second" in out

    # The report: rates of the games in each seat, by hand from EXPECTED.
    markdown = (workdir / "report.md").read_text()
    section = markdown.split("## Against an opponent")[1].split("\n## ")[0]
    ttt = section.split("### pgx:tic_tac_toe")[1].split("###")[0]
    assert _table_rows(ttt) == [
        [
            "7",
            "mcts:7",
            "5",
            "33.3% / 33.3% / 33.3%",
            "100.0% / 0.0% / 0.0%",
            "60.0% / 20.0% / 20.0%",
        ],
        [
            "8",
            "mcts:7",
            "5",
            "66.7% / 0.0% / 0.0% (33.3% unfinished)",
            "0.0% / 50.0% / 50.0%",
            "40.0% / 20.0% / 20.0% (20.0% unfinished)",
        ],
    ]
    c4 = section.split("### pgx:connect_four")[1]
    assert _table_rows(c4) == [
        [
            "7",
            "random",
            "4",
            "0.0% / 0.0% / 100.0%",
            "100.0% / 0.0% / 0.0%",
            "50.0% / 0.0% / 50.0%",
        ],
        [
            "8",
            "random",
            "4",
            "50.0% / 50.0% / 0.0%",
            "0.0% / 100.0% / 0.0%",
            "25.0% / 75.0% / 0.0%",
        ],
    ]
    assert "CartPole" not in section


def _table_rows(markdown):
    """The cells of a markdown table's body rows."""
    rows = [line for line in markdown.splitlines() if line.startswith("| ")][1:]  # no header
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in rows]


def test_suite_resume_plays_the_missing_opponent_games(tmp_path, monkeypatch, capsys):
    fake = _FakeSuiteRun(monkeypatch)
    workdir = tmp_path / "runs"
    board = _board_suite(tmp_path)
    # Killed while restoring tic-tac-toe's second seed: the first seed's games are saved.
    fake.interrupt_at = ("pgx_tic_tac_toe", 1)
    with pytest.raises(KeyboardInterrupt):
        suite.run_suite(board, workdir, num_seeds=2, env_steps=64, report=False)
    rows = _opponent_rows(workdir)
    assert rows[("pgx_tic_tac_toe", 0)]["total"] == EXPECTED[("pgx_tic_tac_toe", 0)][0]
    assert rows[("pgx_tic_tac_toe", 1)] is None
    results = json.loads((workdir / "results.json").read_text())
    assert results["environments"]["pgx:tic_tac_toe"]["done"] is True  # trained

    # Run again: nothing is trained again, only the missing seed plays; then connect four's turn.
    fake.interrupt_at, fake.trained, fake.restored = None, [], []
    suite.run_suite(board, workdir, num_seeds=2, env_steps=64, report=False)
    assert fake.trained == ["gymnax:CartPole-v1", "pgx:connect_four"]
    assert fake.restored == [
        ("pgx_tic_tac_toe", 1),
        ("pgx_connect_four", 0),
        ("pgx_connect_four", 1),
    ]
    rows = _opponent_rows(workdir)
    assert rows[("pgx_tic_tac_toe", 1)]["moving_first"] == EXPECTED[("pgx_tic_tac_toe", 1)][1]
    out = capsys.readouterr().out
    assert "[1/3] pgx:tic_tac_toe: done before, not run again" in out
    assert "[1/3] pgx:tic_tac_toe: 1 seed(s) against mcts:7" in out

    # Everything done and played: a third call restores no agent.
    fake.trained, fake.restored = [], []
    before = (workdir / "results.json").read_text()
    suite.run_suite(board, workdir, num_seeds=2, env_steps=64, report=False)
    assert (fake.trained, fake.restored) == ([], [])
    assert (workdir / "results.json").read_text() == before

    # A done environment with no games at all (its opponent named after it finished), or with
    # games against another opponent, plays them; the others do not.
    results = json.loads(before)
    for row in results["environments"]["pgx:tic_tac_toe"]["seeds"]:
        del row["opponent"]
    (workdir / "results.json").write_text(json.dumps(results))
    suite.run_suite(
        _board_suite(tmp_path, "mcts:3"), workdir, num_seeds=2, env_steps=64, report=False
    )
    assert fake.trained == []
    assert fake.restored == [
        ("pgx_tic_tac_toe", 0),
        ("pgx_tic_tac_toe", 1),
        ("pgx_connect_four", 0),
        ("pgx_connect_four", 1),
    ]
    rows = _opponent_rows(workdir)
    assert rows[("pgx_connect_four", 1)]["name"] == "mcts:3"
    assert rows[("pgx_tic_tac_toe", 0)]["moving_second"] == EXPECTED[("pgx_tic_tac_toe", 0)][2]

    # Another number of games is another result too.
    fake.restored = []
    suite.run_suite(
        _board_suite(tmp_path, "mcts:3", c4_games=6),
        workdir,
        num_seeds=2,
        env_steps=64,
        report=False,
    )
    assert fake.restored == [("pgx_connect_four", 0), ("pgx_connect_four", 1)]
    assert _opponent_rows(workdir)[("pgx_connect_four", 0)]["episodes"] == 6


def test_suite_resumes_a_changed_configuration_only_when_allowed(tmp_path, monkeypatch, capsys):
    fake = _FakeSuiteRun(monkeypatch)
    suite_file = _write_suite(tmp_path / "one.toml", [("gymnax:CartPole-v1", "cartpole", TINY)])
    workdir = tmp_path / "runs"
    argv = ["suite", "--suite", str(suite_file), "--seeds", "1", "--workdir", str(workdir)]
    # An unfinished run whose saved configuration differs (a field another version had, say).
    suite.run_suite(suite_file, workdir, num_seeds=1, env_steps=64, report=False)
    results = json.loads((workdir / "results.json").read_text())
    results["environments"]["gymnax:CartPole-v1"]["done"] = False
    (workdir / "results.json").write_text(json.dumps(results))
    config_path = workdir / "gymnax_CartPole-v1" / "config.json"
    saved = json.loads(config_path.read_text())
    saved["td_steps"] = saved["td_steps"] + 1
    config_path.write_text(json.dumps(saved))
    capsys.readouterr()

    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--env-steps", "64"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"td_steps: {saved['td_steps']} -> {saved['td_steps'] - 1}" in err
    assert "--allow-config-change" in err
    assert fake.trained == ["gymnax:CartPole-v1"] * 2  # the refused call stopped in training

    assert cli.main([*argv, "--env-steps", "64", "--allow-config-change"]) == 0
    assert fake.trained == ["gymnax:CartPole-v1"] * 3
    assert json.loads(config_path.read_text())["td_steps"] == saved["td_steps"] - 1
    assert json.loads((workdir / "results.json").read_text())["environments"]["gymnax:CartPole-v1"][
        "done"
    ]
