"""The `mz-jax` command: one tiny Catch run trained and evaluated in-process, presets, errors."""

import ast
import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

import mz_jax
from mz_jax import TrainConfig
from mz_jax.cli.main import default_workdir, main
from mz_jax.config.presets import PresetError, list_presets, load_preset
from mz_jax.envs import make_env
from mz_jax.run.metrics import EVAL_RETURN, LOSS, UPDATES
from mz_jax.run.records import read_metrics
from mz_jax.training.train import make_train

PRESETS = (
    "acrobot",
    "backgammon",
    "backgammon_gpu",
    "breakout_minatar",
    "breakout_minatar_mlp",
    "cartpole",
    "cartpole_sample_efficient",
    "catch",
    "connect_four",
    "connect_four_gpu",
    "game_2048",
    "game_2048_gpu",
    "minatar_gpu",
    "mountaincar",
    "tic_tac_toe",
)
ITERATION = 8 * 4  # num_envs x rollout_length below
TOTAL = 4 * ITERATION

# Overrides of the catch preset down to a test's size (a multiple of the 4 forced host devices).
TINY = [
    "--total-env-steps", str(TOTAL),
    "--num-envs", "8",
    "--rollout-length", "4",
    "--batch-size", "8",
    "--updates-per-iteration", "1",
    "--num-unroll-steps", "2",
    "--td-steps", "3",
    "--replay-capacity", "256",
    "--eval-every-env-steps", str(2 * ITERATION),
    "--eval-episodes", "4",
    "--eval-max-steps", "12",
    "--log-every-seconds", "1000",
    "--search.num-simulations", "2",
    "--network.hidden-sizes", "16",
    "--network.latent-size", "16",
]  # fmt: skip


def error_line(capsys) -> str:
    """The one line a failed command printed to stderr (failing unless it is one line)."""
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def files_of(workdir: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``workdir``: its path -> (size, modification time in ns)."""
    return {
        str(p.relative_to(workdir)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in workdir.rglob("*")
        if p.is_file()
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A Catch run of 4 iterations from the `catch` preset; (workdir, console output)."""
    workdir = tmp_path_factory.mktemp("cli") / "catch"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(
            ["train", "--config", "catch", "--workdir", str(workdir), "--seed", "3", *TINY]
        )
    assert status == 0
    return workdir, out.getvalue()


def test_train_writes_config_metrics_checkpoint_and_curve(trained):
    workdir, out = trained
    assert f"done: {TOTAL} env steps" in out

    saved = json.loads((workdir / "config.json").read_text())
    assert saved["env"] == "gymnax:Catch-bsuite"  # from the preset
    assert saved["discount"] == 0.97  # from the preset, not overridden
    assert saved["seed"] == 3
    assert saved["num_envs"] == 8 and saved["total_env_steps"] == TOTAL
    assert saved["search"]["num_simulations"] == 2
    assert saved["network"]["hidden_sizes"] == [16]

    records = read_metrics(workdir)
    assert records
    for record in records:
        assert {"step", "env_steps", "wall_s"} <= set(record)
        assert record["env_steps"] % ITERATION == 0 and 0 < record["env_steps"] <= TOTAL
    assert max(r["env_steps"] for r in records) == TOTAL
    assert any(LOSS in r and "loss/value" in r and r.get(UPDATES, 0) > 0 for r in records)
    evaluated = [r for r in records if EVAL_RETURN in r]
    assert {r["env_steps"] for r in evaluated} == {2 * ITERATION, TOTAL}
    for record in evaluated:  # Catch pays +1 or -1 per episode; 4 episodes averaged
        assert record[EVAL_RETURN] in {-1.0, -0.5, 0.0, 0.5, 1.0}

    steps = [p.name for p in (workdir / "checkpoints").iterdir() if p.name.isdigit()]
    assert steps, "no checkpoint"
    assert (workdir / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_prints_returns(trained, capsys):
    workdir, _ = trained
    assert main(["eval", "--workdir", str(workdir), "--episodes", "4", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "gymnax:Catch-bsuite" in out
    assert "4 greedy episodes, 4 finished within 12 steps; 2 simulations a move" in out
    mean, low, high = map(
        float, re.search(r"return: mean (\S+), min (\S+), max (\S+);", out).groups()
    )
    assert low in (-1.0, 1.0) and high in (-1.0, 1.0)
    assert low <= mean <= high
    assert mean in {-1.0, -0.5, 0.0, 0.5, 1.0}
    assert "wins" not in out  # single-player


def test_eval_step_picks_a_checkpoint(trained, capsys):
    workdir, _ = trained
    steps = sorted(int(p.name) for p in (workdir / "checkpoints").iterdir() if p.name.isdigit())
    assert (
        main(["eval", "--workdir", str(workdir), "--episodes", "2", "--step", str(steps[0])]) == 0
    )
    assert f"checkpoint {steps[0]} (" in capsys.readouterr().out

    missing = steps[-1] + 1  # no run writes a checkpoint past its newest
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--workdir", str(workdir), "--step", str(missing)])
    assert exit_info.value.code == 2  # bad input
    err = capsys.readouterr().err
    assert f"step {missing} is not a checkpoint" in err and str(steps[-1]) in err
    assert "Traceback" not in err


def test_the_first_lines_say_what_the_run_is_then_time_the_compile(trained):
    _, out = trained
    lines = out.splitlines()
    assert lines[0].startswith("mz_jax: gymnax:Catch-bsuite | ")
    assert lines[1] == "compiling the training step ..."
    assert re.fullmatch(r"compiled the training step in \d+\.\ds", lines[2]), lines[2]
    assert re.match(r"\[ *[\d.]+s\] env steps ", lines[3]), lines[3]


def test_a_finished_run_run_again_says_so_in_one_line_and_writes_nothing(trained, capsys):
    workdir, _ = trained
    before = files_of(workdir)
    argv = ["train", "--config", "catch", "--workdir", str(workdir), "--seed", "3", *TINY]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{workdir} holds a finished run: checkpoint 4 reached {TOTAL} of total_env_steps={TOTAL} "
        "environment steps; nothing to do (a larger --total-env-steps continues it)"
    ]
    assert files_of(workdir) == before


def test_eval_errors(trained, tmp_path, capsys):
    workdir, _ = trained
    # Bad input, 2: a folder that is not a run's, or a run with no checkpoint yet.
    (tmp_path / "empty").mkdir()
    for folder in ("missing", "empty"):
        with pytest.raises(SystemExit) as exit_info:
            main(["eval", "--workdir", str(tmp_path / folder)])
        assert exit_info.value.code == 2
        line = error_line(capsys)
        assert line.startswith("mz-jax eval: error: ") and "config.json" in line, line

    (tmp_path / "fresh").mkdir()
    shutil.copy(workdir / "config.json", tmp_path / "fresh" / "config.json")
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--workdir", str(tmp_path / "fresh")])
    assert exit_info.value.code == 2
    line = error_line(capsys)
    assert line.startswith("mz-jax eval: error:") and "no checkpoint" in line, line

    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--workdir", str(workdir), "--opponent", "random"])
    assert exit_info.value.code != 0
    assert "single-player" in capsys.readouterr().err

    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--workdir", str(workdir), "--num-simulations", "0"])
    assert exit_info.value.code != 0
    assert "--num-simulations 0 is invalid: allowed an integer >= 1" in capsys.readouterr().err


def test_resuming_with_another_config_is_refused(trained, capsys):
    workdir, _ = trained
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--config", "catch", "--workdir", str(workdir), *TINY, "--discount", "0.5"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "discount: 0.97 -> 0.5" in err
    assert "--allow-config-change" in err


@pytest.mark.parametrize(
    "args, names",
    [
        (["--num-unroll-steps", "0"], ["num_unroll_steps", "0", "allowed an integer >= 1"]),
        (["--search.num-simulations", "0"], ["num_simulations", "0"]),
        (["--discount", "1.5"], ["discount", "1.5", "allowed"]),
        (["--network.hidden-sizes"], ["hidden_sizes"]),  # tyro parses no value as ()
        (["--num-envs", "abc"], ["--num-envs", "'abc'"]),  # tyro's parser refuses it
        (["--network.kind", "bogus"], ["--network.kind", "'bogus'", "auto, mlp, resnet"]),
        (["--bogus-flag", "3"], ["unrecognized arguments: --bogus-flag 3", "--help"]),
        (["--num-envs"], ["--num-envs"]),
    ],
)
def test_bad_flag_or_value_is_one_line_naming_it_with_status_2(args, names, tmp_path, capsys):
    workdir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--config", "catch", "--workdir", str(workdir), *args])
    assert exit_info.value.code == 2
    line = error_line(capsys)
    assert line.startswith("mz-jax train: error: "), line
    for name in names:
        assert name in line, line
    assert not workdir.exists()  # nothing written for a bad command


def test_a_workdir_that_is_a_file_is_bad_input(tmp_path, capsys):
    file = tmp_path / "notes.txt"
    file.write_text("mine\n")
    for workdir in (file, file / "run"):
        with pytest.raises(SystemExit) as exit_info:
            main(["train", "--config", "catch", "--workdir", str(workdir), *TINY])
        assert exit_info.value.code == 2
        line = error_line(capsys)
        assert line.startswith(f"mz-jax train: error: workdir '{workdir}' is not a directory"), line
    assert file.read_text() == "mine\n"


def test_unknown_env_is_reported_before_anything_is_written(tmp_path, capsys):
    workdir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--workdir", str(workdir), "--env", "gymnax:CartPol-v1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "gymnax:CartPol-v1" in err and "gymnax:CartPole-v1" in err  # the close match
    assert not (workdir / "config.json").exists()


def test_unknown_preset_lists_the_available_ones(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--config", "cartpol"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown preset" in err and "'cartpol'" in err
    for name in PRESETS:
        assert name in err


def test_presets():
    """Every preset loads, validates and names the environment it is for (values are tuned there)."""
    assert set(PRESETS) <= set(list_presets())
    expected_env = {
        "acrobot": "gymnax:Acrobot-v1",
        "mountaincar": "gymnax:MountainCar-v0",
        "cartpole": "gymnax:CartPole-v1",
        "cartpole_sample_efficient": "gymnax:CartPole-v1",
        "catch": "gymnax:Catch-bsuite",
        "tic-tac-toe": "pgx:tic_tac_toe",  # dashes are accepted for underscores
        "connect_four": "pgx:connect_four",
        "breakout_minatar": "gymnax:Breakout-MinAtar",
        "breakout_minatar_mlp": "gymnax:Breakout-MinAtar",
        "minatar_gpu": "gymnax:Breakout-MinAtar",
        "game_2048": "pgx:2048",
        "backgammon": "pgx:backgammon",
        "connect_four_gpu": "pgx:connect_four",
        "backgammon_gpu": "pgx:backgammon",
        "game_2048_gpu": "pgx:2048",
    }
    for name, env in expected_env.items():
        config = load_preset(name)
        assert config.env == env
        assert config.total_env_steps is not None
    # Board games are trained on Monte-Carlo targets: td_steps reaches past the longest game.
    ttt = load_preset("tic_tac_toe")
    assert (ttt.discount, ttt.td_steps) == (1.0, 9)
    connect_four = load_preset("connect_four")
    assert (connect_four.discount, connect_four.td_steps) == (1.0, 6 * 7)
    # Acrobot's goal reaches the values only through the exploratory steps that found it.
    acrobot = load_preset("acrobot")
    assert acrobot.random_action_probability > 0 and acrobot.exploration_repeat_exponent
    assert not acrobot.stop_value_targets_at_exploration and acrobot.decoupled_weight_decay
    # The games with chance are Stochastic MuZero's, searched by Gumbel MuZero with chance nodes;
    # backgammon's results are +-1, 2 or 3 at the end of a game.
    for name in ("game_2048", "backgammon"):
        stochastic = load_preset(name)
        assert stochastic.network.num_chance_outcomes == 32 and stochastic.search.policy == "gumbel"
    backgammon = load_preset("backgammon")
    assert backgammon.discount == 1.0 and backgammon.network.value_support_size >= 3


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_builds_for_its_own_environment(name):
    """Each preset passes the checks the build makes against its environment, which loading it
    does not: a mirror symmetry where it mirrors its batches, supports that hold its returns, a
    network for its observations. Nothing is compiled."""
    config = load_preset(name)
    if config.augment_reflection:
        assert make_env(config.env).reflection is not None
    trainer = make_train(config)
    assert trainer.config.env == config.env


def test_default_workdir_names_the_preset_or_the_environment():
    assert default_workdir("cartpole", load_preset("cartpole")).as_posix() == "runs/cartpole"
    assert default_workdir(None, TrainConfig()).as_posix() == "runs/gymnax_CartPole-v1"


def test_preset_from_a_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "from mz_jax import TrainConfig\n\n"
        "def config():\n"
        "    return TrainConfig(env='gymnax:Catch-bsuite', num_envs=4)\n"
    )
    assert load_preset(str(path)) == TrainConfig(env="gymnax:Catch-bsuite", num_envs=4)
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(PresetError, match=r"defines no function config\(\)"):
        load_preset(str(tmp_path / "empty.py"))
    (tmp_path / "bad.py").write_text(
        "from mz_jax import TrainConfig\n\ndef config():\n    return TrainConfig(num_envs=0)\n"
    )
    with pytest.raises(PresetError, match="'num_envs' = 0"):
        load_preset(str(tmp_path / "bad.py"))
    with pytest.raises(PresetError, match="no such file"):
        load_preset(str(tmp_path / "absent.py"))


def test_envs_lists_supported_names(capsys):
    assert main(["envs"]) == 0
    names = capsys.readouterr().out.split()
    assert {"gymnax:CartPole-v1", "pgx:tic_tac_toe", "toy:gamble"} <= set(names)
    assert all(name.startswith(("gymnax:", "pgx:", "toy:")) for name in names)


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--help"], ["train", "eval", "suite", "report", "envs", "cartpole"]),
        (["train", "--help"], ["--config", "--workdir", "--search.num-simulations", "--num-envs"]),
        (["train", "--config", "catch", "--help"], ["Catch-bsuite"]),
        (["eval", "--help"], ["--workdir", "--episodes", "--opponent", "--step"]),
        (["report", "--help"], ["SUITE_WORKDIR", "--references", "--num-resamples", "--seed"]),
        (["envs", "--help"], ["environment names"]),
    ],
)
def test_help(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for text in expected:
        assert text in out, text
    # Plain text: no reStructuredText markup from the docstrings the help is made of.
    markup = re.findall(r"``|:(?:func|class|mod|data|meth|attr):`", out)
    assert not markup, markup


def test_no_or_unknown_command_is_a_usage_error(capsys):
    for argv in ([], ["fly"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert "usage: mz-jax" in capsys.readouterr().err


def _package_import_graph() -> dict[str, set[str]]:
    """Module -> the ``mz_jax`` modules it imports, at the top or inside a function (dotted names
    below the package: ``"cli"``, ``"envs.base"``; the package's own ``__init__`` left out)."""
    package = Path(mz_jax.__file__).parent
    names = {
        ".".join(path.relative_to(package).with_suffix("").parts).removesuffix(".__init__")
        for path in package.rglob("*.py")
    } - {"__init__"}

    def module(dotted: str) -> str | None:
        inside = dotted.removeprefix("mz_jax").lstrip(".")
        return inside if inside in names else None

    graph = {}
    for name in names:
        path = package / (name.replace(".", "/") + ".py")
        if not path.exists():
            path = package / name.replace(".", "/") / "__init__.py"
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mz_jax"):
                for alias in node.names:  # a submodule by name, else the module named
                    imported.add(module(f"{node.module}.{alias.name}") or module(node.module))
            elif isinstance(node, ast.Import):
                imported |= {module(alias.name) for alias in node.names}
        graph[name] = imported - {name, None}
    return graph


def test_package_imports_have_no_cycle_and_never_import_the_cli():
    graph = _package_import_graph()
    assert "suite" in graph and "envs.base" in graph  # the graph is the package's
    assert not [name for name, imported in graph.items() if "cli" in imported]

    def reachable(start):
        seen, stack = set(), list(graph[start])
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(graph.get(name, ()))
        return seen

    assert not [name for name in graph if name in reachable(name)]
