"""Benchmark-suite runs: every environment of a suite, S seeds each as one program, one report.

::

    mz-jax suite --suite classic --seeds 5 --workdir runs/classic
    mz-jax suite --suite my_suite.toml --seeds 3 --workdir runs/mine --env-steps 50000

Each environment is trained with its preset and ``num_seeds = S`` (:func:`mz_jax.training.train.make_train`
vmaps the whole run state over the seeds: one compiled program per environment) by
:func:`mz_jax.run.loop.run_training` in ``<workdir>/<environment>/``, so a run that is stopped or killed
resumes from its newest checkpoint. ``<workdir>/results.json`` records, per environment and seed,
the final and best greedy-evaluation returns, env steps and wall time; an environment marked done
there is not run again. An environment of a two-player game may name an ``opponent``: once it is
trained, each seed's final agent plays ``opponent_episodes`` greedy games against it (half of them
moving first), and results.json records the wins, draws and losses in total and per seat. At the end
:func:`mz_jax.suite.report.write_report` writes ``report.md``, the learning curves and the aggregate
scores. :func:`mz_jax.suite.results.export_finished` (``mz-jax report WORKDIR --export DIR``)
copies the finished environments' results, configurations and metrics, without replay or
checkpoints, to a directory to commit, a copy of which resumes the suite on another machine.

A suite file (TOML or JSON) lists environments, each with an optional preset, field overrides and
opponent::

    [[environment]]
    env = "gymnax:CartPole-v1"
    preset = "cartpole"              # a preset's name or a .py path; default TrainConfig()

    [[environment]]
    env = "gymnax:Acrobot-v1"
    preset = "cartpole"              # the preset's other fields, this environment
    overrides = { max_episode_steps = 500, "search.num_simulations" = 8 }

    [[environment]]
    env = "pgx:tic_tac_toe"
    preset = "tic_tac_toe"
    opponent = "mcts:1000"           # 'random', 'mcts:N' (pgx games) or 'pip_count' (backgammon)
    opponent_episodes = 200          # games per seed, half of them moving first; default 200
"""

from __future__ import annotations

import json
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mz_jax.config.overrides import override
from mz_jax.config.presets import PresetError, load_preset
from mz_jax.config.train import TrainConfig
from mz_jax.envs import make_env
from mz_jax.run.checkpoint import CheckpointError
from mz_jax.run.loop import NonFiniteError, run_training
from mz_jax.run.records import evaluation_curves
from mz_jax.run.resume import check_finished_run
from mz_jax.run.workdir import RESULTS_FILE, sanitise, write_atomically
from mz_jax.suite.opponent import DEFAULT_OPPONENT_EPISODES, check_opponent, play_opponent
from mz_jax.suite.report import write_report

_ENTRY_KEYS = ("env", "preset", "overrides", "opponent", "opponent_episodes")


class SuiteEntry(NamedTuple):
    """One environment of a suite.

    Attributes:
      env: the environment name (``gymnax:<id>`` or ``pgx:<id>``).
      preset: the preset whose configuration it trains with (None: ``TrainConfig()`` defaults).
      overrides: field values replacing the preset's (dotted names for nested fields, e.g.
        ``"search.num_simulations"``).
      opponent: two-player games: who each seed's final agent plays after training, ``"random"``
        (a uniformly random player), ``"mcts:N"`` (:mod:`mz_jax.mcts.baseline`, pgx games only) or
        ``"pip_count"`` (:mod:`mz_jax.envs.backgammon`, ``pgx:backgammon`` only); None: no such
        games.
      opponent_episodes: the games against ``opponent`` per seed, >= 2; the agent moves first in
        the first ``(opponent_episodes + 1) // 2`` and second in the others.
    """

    env: str
    preset: str | None = None
    overrides: Mapping[str, Any] = {}
    opponent: str | None = None
    opponent_episodes: int = DEFAULT_OPPONENT_EPISODES


# entry_config sets these for every entry; an override of them is refused, not ignored.
_SET_BY_THE_SUITE = frozenset({"env", "seed", "num_seeds"})

# The MLP preset: the ResNet one (breakout_minatar) is for an accelerator (benchmarks/suites/minatar_resnet.toml).
_MINATAR = {"preset": "breakout_minatar_mlp", "overrides": {"eval_max_steps": 2_500}}

SUITES: dict[str, tuple[SuiteEntry, ...]] = {
    "classic": (
        SuiteEntry("gymnax:CartPole-v1", "cartpole"),
        SuiteEntry("gymnax:Acrobot-v1", "acrobot"),
        SuiteEntry("gymnax:MountainCar-v0", "mountaincar"),
        SuiteEntry("gymnax:Catch-bsuite", "catch"),
    ),
    "minatar": tuple(
        SuiteEntry(f"gymnax:{game}-MinAtar", **_MINATAR)
        for game in ("Asterix", "Breakout", "Freeway", "SpaceInvaders")
    ),
    "board": (
        SuiteEntry("pgx:tic_tac_toe", "tic_tac_toe", opponent="mcts:1000"),
        SuiteEntry("pgx:connect_four", "connect_four", opponent="mcts:200"),
    ),
}
"""The built-in suites. Environments without a preset of their own borrow the nearest one (same
network kind and reward scale) with the fields their episodes need: evaluation long enough for the
environment's own time limit (Freeway-MinAtar's is 2,500 steps; the MinAtar games borrow the MLP
preset measured on Breakout, 21 to 42 minutes a seed on two CPU cores). The board games end against
the MCTS baseline, 200 games per seed: the targets are no loss in tic-tac-toe against
``mcts:1000`` and 90% wins in connect four against ``mcts:200`` in each seat."""


def load_suite(suite: str | Path) -> tuple[SuiteEntry, ...]:
    """The entries of a built-in suite (by name) or of a suite file (``.toml`` or ``.json``).

    Raises:
      ValueError: an unknown suite name (listing the built-in ones), a missing or malformed file,
        a duplicated environment, or an entry without ``env``, with unknown keys or with an
        opponent it cannot have (see :func:`mz_jax.suite.opponent.check_opponent`).
    """
    name = str(suite)
    if name in SUITES:
        return SUITES[name]
    path = Path(name).expanduser()
    if path.suffix not in (".toml", ".json"):
        raise ValueError(
            f"--suite {name!r}: unknown suite; allowed {', '.join(sorted(SUITES))}, or a path to a "
            ".toml or .json suite file"
        )
    if not path.is_file():
        raise ValueError(f"--suite {name!r}: no such file")
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as error:
        raise ValueError(f"--suite {name!r}: cannot be read: {error}") from error
    items = data.get("environment") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError(
            f"--suite {name!r}: expected a list 'environment' of tables with 'env' (and optional "
            "'preset', 'overrides', 'opponent', 'opponent_episodes')"
        )
    entries = []
    for index, item in enumerate(items):
        where = f"--suite {name!r}, environment {index}"
        if not isinstance(item, dict) or not isinstance(item.get("env"), str):
            raise ValueError(f"{where}: needs 'env' = 'gymnax:<id>' or 'pgx:<id>'")
        unknown = sorted(set(item) - set(_ENTRY_KEYS))
        if unknown:
            raise ValueError(
                f"{where}: unknown key(s) {', '.join(unknown)}; allowed {', '.join(_ENTRY_KEYS)}"
            )
        preset, overrides = item.get("preset"), item.get("overrides", {})
        if preset is not None and not isinstance(preset, str):
            raise ValueError(f"{where}: 'preset' must be a preset name or path; got {preset!r}")
        if not isinstance(overrides, dict):
            raise ValueError(f"{where}: 'overrides' must be a table of field values")
        entry = SuiteEntry(
            item["env"],
            preset,
            overrides,
            opponent=item.get("opponent"),
            opponent_episodes=item.get("opponent_episodes", DEFAULT_OPPONENT_EPISODES),
        )
        if "opponent_episodes" in item and entry.opponent is None:
            raise ValueError(
                f"{where}: 'opponent_episodes' = {entry.opponent_episodes!r} without an "
                "'opponent': name the opponent ('random', 'mcts:N' or 'pip_count') or leave both out"
            )
        check_opponent(entry, where=where)
        entries.append(entry)
    envs = [entry.env for entry in entries]
    duplicated = sorted({env for env in envs if envs.count(env) > 1})
    if duplicated:
        raise ValueError(f"--suite {name!r}: environment(s) listed twice: {', '.join(duplicated)}")
    return tuple(entries)


def entry_config(
    entry: SuiteEntry, *, num_seeds: int, seed: int = 0, env_steps: int | None = None
) -> TrainConfig:
    """The configuration an entry trains with: its preset, its overrides, the suite's seeds.

    Raises:
      ValueError: an unknown field or invalid value (naming it), a run without an end or without
        evaluations (a suite needs both), or an opponent the entry cannot have
        (:func:`mz_jax.suite.opponent.check_opponent`).
    """
    check_opponent(entry)
    try:
        base = load_preset(entry.preset) if entry.preset else TrainConfig()
    except PresetError as error:
        raise ValueError(f"{entry.env}: {error}") from error
    changes = dict(entry.overrides)
    decided_by_suite = sorted(set(changes) & _SET_BY_THE_SUITE)
    if decided_by_suite:
        raise ValueError(
            f"{entry.env}: overrides may not set {', '.join(map(repr, decided_by_suite))}: the "
            "suite sets the environment and the seeds (--seed, --seeds) for every entry"
        )
    changes.update(env=entry.env, num_seeds=num_seeds, seed=seed)
    if env_steps is not None:
        changes["total_env_steps"] = env_steps
    try:
        config = override(base, changes)
    except ValueError as error:
        raise ValueError(f"{entry.env}: {error}") from error
    if config.total_env_steps is None:
        raise ValueError(
            f"{entry.env}: config field 'total_env_steps' is None (runs until stopped); a suite "
            "needs an end: pass --env-steps or set it in the preset or the overrides"
        )
    if not config.eval_every_env_steps:
        raise ValueError(
            f"{entry.env}: config field 'eval_every_env_steps' = 0 (never evaluates); a suite "
            "reports greedy evaluations: allowed an integer >= 1"
        )
    return config


def env_workdir_name(env: str) -> str:
    """The directory of an environment inside the suite workdir (``:`` and ``/`` made ``_``)."""
    return sanitise(env)


def seed_results(env_workdir: Path, seeds: list[int]) -> list[dict]:
    """Final and best greedy-evaluation return of each seed, from the run's ``metrics.jsonl``."""
    curves = evaluation_curves(env_workdir, default_seed=seeds[0])
    results = []
    for seed in seeds:
        curve = curves.get(seed)
        found = curve is not None and len(curve.returns)
        results.append(
            {
                "seed": seed,
                "final_return": float(curve.returns[-1]) if found else None,
                "best_return": float(curve.returns.max()) if found else None,
                "env_steps": int(curve.env_steps[-1]) if found else 0,
            }
        )
    return results


def _results_to_resume(path: Path, settings: dict, configs: dict[str, TrainConfig]) -> dict:
    """The suite's ``results.json`` to carry on: ``settings`` with no environment yet, or, where
    ``path`` exists, its environments, once its settings are found equal to ``settings`` and each
    finished environment's run found to use the configuration in ``configs`` (env -> config).

    Raises:
      ValueError: the file belongs to a suite run with other settings, or a finished run used
        another configuration (:func:`mz_jax.run.resume.check_finished_run`).
    """
    results = {**settings, "environments": {}}
    if not path.exists():
        return results
    saved = json.loads(path.read_text())
    differing = [k for k in settings if saved.get(k) != settings[k]]
    if differing:
        raise ValueError(
            f"{path} belongs to a suite run with other settings ("
            + ", ".join(f"{k}: {saved.get(k)!r} -> {settings[k]!r}" for k in differing)
            + "); use another --workdir"
        )
    results["environments"] = saved.get("environments", {})
    for env, config in configs.items():
        if results["environments"].get(env, {}).get("done"):
            check_finished_run(path.parent / env_workdir_name(env), config, name=env)
    return results


def run_suite(
    suite: str | Path,
    workdir: str | Path,
    *,
    num_seeds: int,
    seed: int = 0,
    env_steps: int | None = None,
    report: bool = True,
    allow_config_change: bool = False,
) -> dict:
    """Trains every environment of ``suite`` with ``num_seeds`` vmapped seeds; resumable.

    Args:
      suite: a built-in suite name (``classic``, ``minatar``, ``board``) or a suite file.
      workdir: where ``results.json``, the report and one directory per environment go. Running
        the same call again skips the environments that finished and resumes the one that did not.
      num_seeds: seeds per environment, trained as one program.
      seed: the first seed (seeds ``seed`` to ``seed + num_seeds - 1``).
      env_steps: environment steps per run, replacing the presets' ``total_env_steps``.
      report: write ``report.md`` and the plots at the end.
      allow_config_change: resume an unfinished environment whose workdir was saved with another
        configuration (``mz-jax train --allow-config-change``; a finished one is still refused).

    An entry with an opponent plays it once trained (:func:`mz_jax.suite.opponent.play_opponent`);
    an environment done before whose seeds lack those games plays them on the next call.

    Returns:
      The contents of ``results.json``.

    Raises:
      ValueError: an unknown suite or environment, an invalid field (before anything is trained), or
        a workdir holding another suite's results.
    """
    workdir = Path(workdir)
    entries = load_suite(suite)
    configs = {  # every entry checked before the first is trained
        entry.env: entry_config(entry, num_seeds=num_seeds, seed=seed, env_steps=env_steps)
        for entry in entries
    }
    for entry in entries:
        make_env(entry.env)  # an unknown name fails here, listing close matches
    seeds = list(range(seed, seed + num_seeds))
    path = workdir / RESULTS_FILE
    results = _results_to_resume(
        path,
        {"suite": str(suite), "num_seeds": num_seeds, "seeds": seeds, "env_steps": env_steps},
        configs,
    )
    workdir.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        write_atomically(path, json.dumps(results, indent=2) + "\n")

    for index, entry in enumerate(entries, 1):
        config = configs[entry.env]
        name = env_workdir_name(entry.env)
        prefix = f"[{index}/{len(entries)}] {entry.env}"
        against_opponent = {"max_steps": config.eval_max_steps, "save": save, "prefix": prefix}
        previous = results["environments"].get(entry.env, {})
        if previous.get("done"):
            print(f"{prefix}: done before, not run again", flush=True)
            # The games against the opponent, if the last call ended before them.
            play_opponent(entry, previous, workdir / name, **against_opponent)
            continue
        print(
            f"{prefix}: preset {entry.preset or 'none'}, "
            f"{num_seeds} seed(s), {config.total_env_steps:,} env steps -> {workdir / name}",
            flush=True,
        )
        record = {"preset": entry.preset, "workdir": name, "done": False}
        results["environments"][entry.env] = record
        save()
        started = time.monotonic()
        try:
            summary = run_training(config, workdir / name, allow_config_change=allow_config_change)
        except (NonFiniteError, CheckpointError) as error:
            record["error"] = str(error)
            record["seeds"] = seed_results(workdir / name, seeds)
            save()
            print(f"{entry.env}: failed: {error}", flush=True)
            continue
        record.update(
            done=not summary["stopped_by_signal"],
            env_steps=summary["env_steps"],
            wall_s=round(summary["wall_s"], 1),
            wall_s_this_call=round(time.monotonic() - started, 1),
        )
        # The seeds ran as one program: each has the run's wall time.
        record["seeds"] = [
            {**r, "wall_s": record["wall_s"]} for r in seed_results(workdir / name, seeds)
        ]
        record.pop("error", None)
        save()
        if summary["stopped_by_signal"]:
            print("stopped by a signal: run the same command again to resume", flush=True)
            return results
        play_opponent(entry, record, workdir / name, **against_opponent)
    if report:
        print(f"report: {write_report(workdir)}", flush=True)
    return results
