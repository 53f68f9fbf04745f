"""A run's ``metrics.jsonl`` read back: its records, rewound on resume, and its return curves.

:class:`mz_jax.run.logger.MetricsLogger` writes the records; a resumed run first drops those past
its checkpoint (:func:`forget_metrics_after`), since it is about to write them again. The curves
(:func:`metric_curves`, :func:`evaluation_curves`) are what the learning-curve plots and a suite's
report draw.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from mz_jax.run import metrics
from mz_jax.run.workdir import METRICS_FILE, write_atomically


def _metrics_lines(workdir: str | Path) -> list[tuple[str, dict]]:
    """``(line, record)`` for each complete record of ``workdir/metrics.jsonl``; a line torn by a
    kill in mid-write (or anything else that is not a JSON object) is skipped."""
    path = Path(workdir) / METRICS_FILE
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            lines.append((line, record))
    return lines


def read_metrics(workdir: str | Path) -> list[dict]:
    """The records of ``workdir/metrics.jsonl`` (a line torn by a kill in mid-write is skipped)."""
    return [record for _, record in _metrics_lines(workdir)]


def forget_metrics_after(workdir: Path, env_steps: int) -> None:
    """Drops the records of ``metrics.jsonl`` past ``env_steps``: a resumed run is about to redo those
    iterations (and write them again). Also drops a line torn by a kill in mid-write; a file left
    with no record is removed."""
    if not (workdir / METRICS_FILE).exists() or jax.process_index() != 0:
        return
    path = workdir / METRICS_FILE
    kept = [
        line + "\n" for line, r in _metrics_lines(workdir) if r.get("env_steps", 0) <= env_steps
    ]
    if not kept:  # no empty file: a start that fails before its first record leaves none
        path.unlink()
        return
    text = "".join(kept)
    if text != path.read_text():  # what a run that drops nothing finds is left as it is
        write_atomically(path, text)


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
