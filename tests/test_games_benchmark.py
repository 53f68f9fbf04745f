"""``benchmarks/games/lease.py``: the games' lease script trains, evaluates, exports and resumes on the
CPU (``--smoke``, connect four), and its counts, intervals and comparisons are right by hand."""

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from games import lease as games

from mz_jax.run.agent import Agent


def run_smoke(tmp_path_factory):
    """Two smoke calls of connect four in the same folders: (statuses, out dir, seconds of the
    second call)."""
    out_dir = tmp_path_factory.mktemp("games_smoke")
    arguments = ["--smoke", "--games", "connect_four", "--out-dir", str(out_dir)]
    first = games.main(arguments)
    started = time.monotonic()
    second = games.main(arguments)
    return (first, second), out_dir, time.monotonic() - started


def check_connect_four_trains_plays_every_opponent_in_each_seat(smoke_run):
    (first, _), out_dir, _ = smoke_run
    assert first == 0
    run = json.loads((out_dir / "results.json").read_text())["runs"][0]
    assert run["status"] == {"connect_four": "done"}
    entry = run["games"]["connect_four"]
    assert entry["runs"]["muzero"]["finished"] is True
    assert entry["runs"]["muzero"]["env_steps"] == entry["runs"]["muzero"]["total_env_steps"] == 64
    assert set(entry["opponents"]) == {"random", "mcts:2", "mcts:4"}
    for result in entry["opponents"].values():
        seats = result["seats"]
        # 4 games a seed: 2 moving first, 2 moving second, and the total is their sum.
        assert seats["moving_first"]["games"] == seats["moving_second"]["games"] == 2
        for key in ("games", "wins", "draws", "losses", "unfinished"):
            assert seats["total"][key] == seats["moving_first"][key] + seats["moving_second"][key]
        for counts in seats.values():
            assert (
                counts["wins"] + counts["draws"] + counts["losses"] + counts["unfinished"]
                == (counts["games"])
            )
            low, high = counts["win_interval"]
            assert 0.0 <= low <= counts["win_rate"] <= high <= 1.0
    assert run["device"]["platform"] == "cpu" and run["commit"]


def check_the_strongest_seed_is_exported_and_restores(smoke_run):
    _, out_dir, _ = smoke_run
    agent = Agent.restore(out_dir / games.AGENT_DIR)
    assert agent.env.name == "pgx:connect_four"
    assert agent.config.network.kind == "resnet"
    assert agent.env_steps == 64
    assert (out_dir / "connect_four" / "muzero" / "metrics.jsonl").is_file()
    section = (out_dir / games.SECTION_FILE).read_text()
    assert "mz-jax train --config connect_four_gpu" in section and "| connect_four |" in section


def check_a_second_call_resumes_without_training_or_playing_again(smoke_run):
    (_, second), out_dir, seconds = smoke_run
    assert second == 0
    runs = json.loads((out_dir / "results.json").read_text())["runs"]
    assert len(runs) == 2
    assert runs[1]["games"]["connect_four"]["runs"]["muzero"]["wall_s"] == 0.0
    assert (
        runs[1]["games"]["connect_four"]["opponents"]
        == runs[0]["games"]["connect_four"]["opponents"]
    )
    assert seconds < 60  # no training and no games: restoring the agent to export it


def test_flag_arguments_spell_fields_as_the_cli_does():
    assert games.flag_arguments(
        {"network.num_chance_outcomes": None, "network.hidden_sizes": (8, 4), "num_envs": 4}
    ) == ["--network.num-chance-outcomes", "None", "--network.hidden-sizes", "8", "4",
          "--num-envs", "4"]  # fmt: skip


def test_seat_counts_add_seeds():
    one = {
        "total": {"wins": 3, "draws": 1, "losses": 0, "unfinished": 0},
        "moving_first": {"wins": 2, "draws": 0, "losses": 0, "unfinished": 0},
        "moving_second": {"wins": 1, "draws": 1, "losses": 0, "unfinished": 0},
    }
    two = {
        "total": {"wins": 1, "draws": 0, "losses": 2, "unfinished": 1},
        "moving_first": {"wins": 1, "draws": 0, "losses": 1, "unfinished": 0},
        "moving_second": {"wins": 0, "draws": 0, "losses": 1, "unfinished": 1},
    }
    totals = games.seat_counts([one, two])
    assert totals["total"] == {"games": 8, "wins": 4, "draws": 1, "losses": 2, "unfinished": 1}
    assert totals["moving_second"] == {
        "games": 4,
        "wins": 1,
        "draws": 1,
        "losses": 1,
        "unfinished": 1,
    }
    rated = games.with_interval(totals["total"])
    assert rated["win_rate"] == 0.5
    # Wilson's 95% interval of 4 of 8, by its formula with z = 1.959964: centre 0.5, half-width
    # z sqrt(0.25/8 + z^2/256) / (1 + z^2/8).
    z = 1.959964
    half = z * np.sqrt(0.25 / 8 + z * z / 256) / (1 + z * z / 8)
    np.testing.assert_allclose(rated["win_interval"], [0.5 - half, 0.5 + half], atol=1e-6)


def test_score_advantage_and_its_interval():
    # Every seed of the first run scores 1.25 times the matching seed of the second; resampling
    # each run's seeds still moves the ratio of means, so the interval spans the estimate.
    first, second = (
        [1250.0, 2500.0, 1875.0, 1500.0, 2000.0],
        [1000.0, 2000.0, 1500.0, 1200.0, 1600.0],
    )
    result = games.score_advantage(first, second)
    assert result["advantage"] == pytest.approx(0.25)
    low, high = result["interval"]
    assert low < 0.25 < high
    # Equal constant scores: no spread, the interval is the point.
    same = games.score_advantage([100.0] * 5, [100.0] * 5)
    assert same["advantage"] == 0.0 and same["interval"] == [0.0, 0.0]
    # With scores spread far apart, the interval is wider than with scores close together.
    close = games.score_advantage([99.0, 101.0, 100.0], [90.0, 91.0, 89.0])
    spread = games.score_advantage([10.0, 190.0, 100.0], [20.0, 160.0, 90.0])
    assert np.diff(spread["interval"])[0] > np.diff(close["interval"])[0]
    assert games.score_advantage([1.0], [0.0]) == {"advantage": None, "interval": None}


def test_2048_summary_pairs_the_seeds_both_runs_played():
    game = games.GAMES["2048"]
    settings = games.Settings()
    evaluations = {
        "stochastic_muzero/0/alone": {"mean": 1200.0},
        "stochastic_muzero/1/alone": {"mean": 1500.0},
        "stochastic_muzero/2/alone": {"mean": 900.0},
        "muzero/0/alone": {"mean": 1000.0},
        "muzero/1/alone": {"mean": 1000.0},
    }
    summary = games.summarise(game, settings, evaluations)
    assert summary["scores"]["stochastic_muzero"] == [1200.0, 1500.0, 900.0, None, None]
    assert summary["compared_seeds"] == [0, 1]
    assert summary["advantage"] == pytest.approx(2700.0 / 2000.0 - 1.0)


def test_the_strongest_seed_waits_for_every_seed():
    game = games.GAMES["connect_four"]
    settings = games.Settings()

    def row(wins):
        return {"total": {"wins": wins}}

    assert games.strongest_seed(game, settings, {"muzero/0/mcts:200": row(3)}) is None
    evaluations = {"muzero/0/mcts:200": row(3), "muzero/1/mcts:200": row(7)}
    assert games.strongest_seed(game, settings, evaluations) == 1
    evaluations["muzero/0/mcts:200"] = row(7)  # a tie goes to the lower index
    assert games.strongest_seed(game, settings, evaluations) == 0


def test_every_run_of_every_game_builds():
    for game in games.GAMES.values():
        for run in game.runs:
            config = games.run_config(run, game.num_seeds, games.Settings())
            assert config.num_seeds == game.num_seeds
    muzero = games.run_config(games.GAMES["2048"].runs[1], 5, games.Settings())
    assert muzero.network.num_chance_outcomes is None


def test_print_setup_names_this_script(capsys):
    assert games.main(["--print-setup"]) == 0
    assert games.LEASE_COMMAND in capsys.readouterr().out


def test_smoke_run(tmp_path_factory):
    """One smoke run (its checks above, in one test so that parallel workers do not each run it)."""
    smoke_run = run_smoke(tmp_path_factory)
    check_connect_four_trains_plays_every_opponent_in_each_seat(smoke_run)
    check_the_strongest_seed_is_exported_and_restores(smoke_run)
    check_a_second_call_resumes_without_training_or_playing_again(smoke_run)
