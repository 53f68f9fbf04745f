"""Reading what a suite run left behind: ``results.json`` and each seed's curves in ``metrics.jsonl``.

``mz-jax suite`` writes ``<suite_workdir>/results.json`` (per environment: its workdir, whether it
finished, env steps, wall time, and per seed the final and best greedy-evaluation returns); each
environment's workdir holds the ``metrics.jsonl`` of its run. :mod:`mz_jax.suite.report` and
:mod:`mz_jax.run.plots` turn what is read here into the report; :func:`export_finished` copies what
the finished environments left behind, without checkpoints, to a directory to commit.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mz_jax.run import metrics
from mz_jax.run.workdir import (
    CONFIG_FILE,
    METRICS_FILE,
    RESULTS_FILE,
    read_metrics,
    write_atomically,
)


class Curve(NamedTuple):
    """One seed's values of a metric; both ``[num_points]``, sorted by env steps.

    Attributes:
      env_steps: environment steps at each point.
      returns: the metric's value at each (a mean return, for the curves drawn).
    """

    env_steps: np.ndarray
    returns: np.ndarray


def finite_number(value: Any) -> float | None:
    """``value`` as a float if it is a finite number; None otherwise (None, "nan", a string...)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def load_results(suite_workdir: str | Path) -> dict:
    """Reads ``results.json`` of a suite workdir and checks its layout.

    Args:
      suite_workdir: the directory ``mz-jax suite --workdir`` wrote.

    Returns:
      The parsed JSON: ``{"suite": ..., "environments": {name: {...}}, ...}``.

    Raises:
      FileNotFoundError: if there is no ``results.json``.
      ValueError: if it is not JSON or lacks an ``environments`` mapping.
    """
    path = Path(suite_workdir) / RESULTS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"no {RESULTS_FILE} in {str(suite_workdir)!r}: pass the --workdir of an `mz-jax suite` "
            "run."
        )
    try:
        results = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(results, dict) or not isinstance(results.get("environments"), dict):
        raise ValueError(f"{path} must hold an object with an 'environments' mapping.")
    for name, entry in results["environments"].items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: the entry of {name!r} must be an object, got {entry!r}.")
    return results


def metric_curves(workdir: str | Path, metric: str, *, default_seed: int = 0) -> dict[int, Curve]:
    """The curve of ``metric`` for each seed in ``workdir/metrics.jsonl``.

    A record's ``"seed"`` names its seed (single-seed runs have none: they count as
    ``default_seed``). Records without the metric, and non-numeric or non-finite values, are
    skipped; where a seed has several values at the same env steps (a resumed run), the last one
    written is kept. A line cut short by a crash is skipped.

    Args:
      workdir: one run's workdir.
      metric: the record field, a name from :mod:`mz_jax.run.metrics`.
      default_seed: the seed of records without a ``"seed"`` key.

    Returns:
      seed -> :class:`Curve`, seeds in increasing order; empty if there is no file or no value.
    """
    points: dict[int, dict[int, float]] = {}
    for record in read_metrics(workdir):
        value, steps = finite_number(record.get(metric)), finite_number(record.get("env_steps"))
        if value is None or steps is None:
            continue
        seed = record.get("seed", default_seed)
        if isinstance(seed, bool) or not isinstance(seed, int):
            continue
        points.setdefault(seed, {})[int(steps)] = value
    curves = {}
    for seed in sorted(points):
        steps = sorted(points[seed])
        curves[seed] = Curve(
            env_steps=np.asarray(steps, np.int64),
            returns=np.asarray([points[seed][s] for s in steps], np.float64),
        )
    return curves


def evaluation_curves(env_workdir: str | Path, *, default_seed: int = 0) -> dict[int, Curve]:
    """The greedy-evaluation curve of each seed (:data:`mz_jax.run.metrics.EVAL_RETURN`); see
    :func:`metric_curves`."""
    return metric_curves(env_workdir, metrics.EVAL_RETURN, default_seed=default_seed)


def final_returns(entry: dict) -> list[float]:
    """Finite final returns of an environment's seeds (a ``results.json`` entry), by seed."""
    seeds = entry.get("seeds") or []
    rows = [
        s for s in seeds if isinstance(s, dict) and finite_number(s.get("final_return")) is not None
    ]
    rows.sort(key=lambda s: s.get("seed", 0) if isinstance(s.get("seed"), int) else 0)
    return [float(s["final_return"]) for s in rows]


def best_returns(entry: dict) -> list[float]:
    """Finite best returns of an environment's seeds (a ``results.json`` entry)."""
    seeds = entry.get("seeds") or []
    return [
        float(s["best_return"])
        for s in seeds
        if isinstance(s, dict) and finite_number(s.get("best_return")) is not None
    ]


def export_finished(suite_workdir: str | Path, dest: str | Path) -> dict:
    """Copies what a suite's finished environments need, without their checkpoints, to ``dest``.

    That is ``results.json`` (its finished environments only) and each one's ``config.json`` and
    ``metrics.jsonl``: 2.1 MB for a MinAtar game whose workdir takes 120 MB, mostly checkpoints.
    From ``dest``, ``mz-jax report`` writes the finished environments' rows of the report
    (:func:`mz_jax.suite.report.write_report`) as the suite workdir gives them, and a copy of ``dest``
    resumes the suite on another machine: ``mz-jax suite`` with the same arguments reports the
    finished environments and trains only the others. An unfinished one is left out, since it
    would start over without its checkpoint.

    Returns:
      The ``results.json`` written to ``dest``.

    Raises:
      FileNotFoundError: no ``results.json`` in ``suite_workdir``, or a finished environment's
        ``config.json`` is missing.
      ValueError: ``dest`` is ``suite_workdir``, or ``results.json`` is malformed.
    """
    suite_workdir, dest = Path(suite_workdir), Path(dest)
    if dest.resolve() == suite_workdir.resolve():
        raise ValueError(
            f"cannot export {str(suite_workdir)!r} into itself: name another directory"
        )
    results = load_results(suite_workdir)
    finished = {
        name: record
        for name, record in results["environments"].items()
        if record.get("done") is True and isinstance(record.get("workdir"), str)
    }
    for record in finished.values():
        source = suite_workdir / record["workdir"]
        if not (source / CONFIG_FILE).is_file():
            raise FileNotFoundError(
                f"{source / CONFIG_FILE} is missing: a finished environment cannot be exported "
                "without the configuration it was trained with"
            )
    for record in finished.values():
        source, target = suite_workdir / record["workdir"], dest / record["workdir"]
        target.mkdir(parents=True, exist_ok=True)
        for name in (CONFIG_FILE, METRICS_FILE):
            if (source / name).is_file():
                shutil.copyfile(source / name, target / name)
    exported = {**results, "environments": finished}
    dest.mkdir(parents=True, exist_ok=True)
    write_atomically(dest / RESULTS_FILE, json.dumps(exported, indent=2) + "\n")
    return exported
