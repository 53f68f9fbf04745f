"""``mz-jax suite``: suites and suite files, per-entry configurations, results.json, resuming."""

import json
import os
import re
from pathlib import Path

import pytest

from mz_jax import cli
from mz_jax.metrics import EVAL_RETURN
from mz_jax.presets import load_preset
from mz_jax.suite import SUITES, SuiteEntry, entry_config, load_suite

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


def _toml_value(value):
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _write_suite(path, entries):
    lines = []
    for env, preset, overrides in entries:
        lines += ["[[environment]]", f"env = {json.dumps(env)}", f"preset = {json.dumps(preset)}"]
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
    suite = _write_suite(
        tmp_path / "tiny.toml",
        [
            ("gymnax:CartPole-v1", "cartpole", TINY),
            ("gymnax:Catch-bsuite", "catch", {**TINY, "eval_max_steps": 20}),
        ],
    )
    workdir = tmp_path / "runs"
    argv = [
        "suite",
        "--suite",
        str(suite),
        "--seeds",
        "2",
        "--seed",
        "7",
        "--workdir",
        str(workdir),
    ]
    assert cli.main([*argv, "--env-steps", "64"]) == 0
    results = json.loads((workdir / "results.json").read_text())
    assert results["seeds"] == [7, 8]
    assert list(results["environments"]) == ["gymnax:CartPole-v1", "gymnax:Catch-bsuite"]
    for record in results["environments"].values():
        assert record["done"] and record["env_steps"] == 64
        evaluations = _evaluations(workdir / record["workdir"] / "metrics.jsonl")
        assert sorted(evaluations) == [7, 8]
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


def test_the_readme_suite_file_is_valid(tmp_path):
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    path = tmp_path / "readme.toml"
    path.write_text(block)
    entries = load_suite(path)
    assert [entry.env for entry in entries] == ["gymnax:CartPole-v1", "gymnax:Acrobot-v1"]
    acrobot = entry_config(entries[1], num_seeds=3)
    assert (acrobot.eval_max_steps, acrobot.search.num_simulations) == (500, 8)
