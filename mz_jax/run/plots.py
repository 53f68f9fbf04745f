"""Return curves against environment steps: a run's ``learning_curve.png`` and a suite's PNGs.

One plotter, :func:`draw_curves`, draws a metric's curves across seeds: a single seed as one line;
several as each seed faintly, the min–max band across seeds and their mean. The savers lay it out:
:func:`plot_learning_curve` (a run: training and greedy-evaluation returns), :func:`save_curve` (one
environment of a suite) and :func:`save_grid` (a suite's environments side by side). Figures are
built without pyplot, so no global state or interactive backend is involved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mz_jax.run import metrics
from mz_jax.run.records import Curve, metric_curves
from mz_jax.run.workdir import LEARNING_CURVE_FILE

STEPS_LABEL = "environment steps"
EVAL_LABEL = "greedy evaluation return"


def draw_curves(
    ax: Any,
    curves: Mapping[int, Curve],
    *,
    label: str = "",
    color: str = "tab:blue",
    markers: bool = False,
    alpha: float = 1.0,
) -> None:
    """Draws one metric's curves (seed -> :class:`Curve`, at least one) on matplotlib axes ``ax``.

    Args:
      ax: the axes.
      curves: seed -> curve.
      label: what the curves are (``"greedy evaluation"``); prefixes the legend entries.
      color: the colour of every line and the band.
      markers: mark each point of the (mean) line; a line of one point is always marked.
      alpha: opacity of the (mean) line.
    """
    prefix = f"{label}: " if label else ""
    if len(curves) == 1:
        ((seed, curve),) = curves.items()
        ax.plot(
            curve.env_steps,
            curve.returns,
            color=color,
            alpha=alpha,
            marker="o" if markers or len(curve.env_steps) == 1 else None,
            label=label or f"seed {seed}",
        )
        return
    for index, curve in enumerate(curves.values()):
        ax.plot(
            curve.env_steps,
            curve.returns,
            color=color,
            alpha=0.3 * alpha,
            linewidth=0.8,
            label=f"{prefix}each seed" if index == 0 else None,
        )
    steps = np.unique(np.concatenate([c.env_steps for c in curves.values()]))
    # Seeds may lack a point (no episode ended there): each step takes the seeds that have one.
    at_step = [
        [c.returns[c.env_steps == s][0] for c in curves.values() if np.any(c.env_steps == s)]
        for s in steps
    ]
    ax.fill_between(
        steps,
        [min(v) for v in at_step],
        [max(v) for v in at_step],
        color=color,
        alpha=0.2 * alpha,
        linewidth=0,
        label=f"{prefix}min–max across seeds",
    )
    ax.plot(
        steps,
        [np.mean(v) for v in at_step],
        color=color,
        alpha=alpha,
        marker="o" if markers or len(steps) == 1 else None,
        label=f"{prefix}mean across seeds",
    )


def _label_axes(ax: Any, title: str, ylabel: str, *, fontsize: float | None = None) -> None:
    ax.set_title(title, fontsize=fontsize)
    ax.set_xlabel(STEPS_LABEL)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def save_curve(path: str | Path, curves: Mapping[int, Curve], title: str) -> None:
    """Saves a PNG of greedy-evaluation curves (seed -> :class:`Curve`, at least one).

    Args:
      path: the PNG to write.
      curves: as :func:`mz_jax.run.records.evaluation_curves` returns them.
      title: the plot's title.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=110)
    ax = fig.subplots()
    draw_curves(ax, curves)
    _label_axes(ax, title, EVAL_LABEL, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def save_grid(path: str | Path, all_curves: Mapping[str, Mapping[int, Curve]]) -> None:
    """Saves a PNG of several environments' greedy-evaluation curves side by side (3 a row).

    Args:
      path: the PNG to write.
      all_curves: environment name (the panel's title) -> seed -> :class:`Curve`; at least one.
    """
    from matplotlib.figure import Figure

    columns = min(3, len(all_curves))
    rows = math.ceil(len(all_curves) / columns)
    fig = Figure(figsize=(4.5 * columns, 3.4 * rows), dpi=100)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, (name, curves) in zip(axes, all_curves.items(), strict=False):
        draw_curves(ax, curves)
        _label_axes(ax, name, EVAL_LABEL, fontsize=9)
    for ax in axes[len(all_curves) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def plot_learning_curve(workdir: str | Path, *, title: str = "") -> Path | None:
    """Saves ``learning_curve.png`` in a run's workdir: training and greedy-evaluation returns
    against environment steps (across the seeds of a multi-seed run).

    Returns:
      The PNG's path, or None (nothing written) if ``metrics.jsonl`` has no return yet.
    """
    series = {
        "training episodes": (metric_curves(workdir, metrics.TRAIN_RETURN), "tab:orange", False),
        "greedy evaluation": (metric_curves(workdir, metrics.EVAL_RETURN), "tab:blue", True),
    }
    if not any(curves for curves, _, _ in series.values()):
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=120)
    ax = fig.subplots()
    for label, (curves, color, evaluation) in series.items():
        if curves:
            # Training returns are noisy and only a guide: drawn fainter than the evaluations.
            draw_curves(
                ax,
                curves,
                label=label,
                color=color,
                markers=evaluation,
                alpha=1 if evaluation else 0.5,
            )
    _label_axes(ax, title, "episode return")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = Path(workdir) / LEARNING_CURVE_FILE
    fig.savefig(path)
    return path
