"""The report of a benchmark-suite run: a markdown table, learning-curve PNGs and aggregate scores.

``mz-jax suite`` writes ``<suite_workdir>/results.json`` (per environment: its workdir, whether it
finished, env steps, wall time, and per seed the final and best greedy-evaluation returns) and calls
:func:`write_report` at the end. Run it alone to regenerate the report::

    python -m mz_jax.report runs/suite

It writes, in the suite workdir:

* ``report.md``: one table row per environment (final return across seeds, best return, normalised
  final return, env steps, wall time); the aggregate scores of the finished environments (mean,
  median and interquartile mean of normalised final returns, with stratified bootstrap 95%
  confidence intervals, :mod:`mz_jax.aggregate`) and the sources of the normalisation; the
  environments left out and why;
* ``curves/<environment>.png``: greedy-evaluation return against env steps, read from the
  environment's ``metrics.jsonl``: the mean across seeds, a min-max band, each seed faintly;
* ``curves.png``: those curves side by side.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mz_jax import aggregate

EVAL_KEY = "eval/episode_return"


class Curve(NamedTuple):
    """One seed's greedy-evaluation returns; both ``[num_evaluations]``, sorted by env steps.

    Attributes:
      env_steps: environment steps at each evaluation.
      returns: mean evaluation return at each.
    """

    env_steps: np.ndarray
    returns: np.ndarray


def _number(value: Any) -> float | None:
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
    path = Path(suite_workdir) / "results.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no results.json in {str(suite_workdir)!r}: pass the --workdir of an `mz-jax suite` run."
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


def evaluation_curves(env_workdir: str | Path, *, default_seed: int = 0) -> dict[int, Curve]:
    """The greedy-evaluation curve of each seed in ``env_workdir/metrics.jsonl``.

    Records carrying ``"eval/episode_return"`` are evaluations; a record's ``"seed"`` names its seed
    (single-seed runs have none: they count as ``default_seed``). Non-numeric or non-finite values
    are skipped; where a seed has several evaluations at the same env steps (a resumed run), the
    last one written is kept.

    Args:
      env_workdir: one environment's workdir.
      default_seed: the seed of records without a ``"seed"`` key.

    Returns:
      seed -> :class:`Curve`, seeds in increasing order; empty if there is no file or no evaluation.
    """
    path = Path(env_workdir) / "metrics.jsonl"
    if not path.is_file():
        return {}
    points: dict[int, dict[int, float]] = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if not isinstance(record, dict):
            continue
        value, steps = _number(record.get(EVAL_KEY)), _number(record.get("env_steps"))
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


def _final_returns(entry: dict) -> list[float]:
    """Finite final returns of an environment's seeds, in increasing seed order."""
    seeds = entry.get("seeds") or []
    rows = [s for s in seeds if isinstance(s, dict) and _number(s.get("final_return")) is not None]
    rows.sort(key=lambda s: s.get("seed", 0) if isinstance(s.get("seed"), int) else 0)
    return [float(s["final_return"]) for s in rows]


def _best_returns(entry: dict) -> list[float]:
    seeds = entry.get("seeds") or []
    return [
        float(s["best_return"])
        for s in seeds
        if isinstance(s, dict) and _number(s.get("best_return")) is not None
    ]


def sanitise(name: str) -> str:
    """A file name for an environment name: ``"gymnax:CartPole-v1"`` -> ``"gymnax_CartPole-v1"``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _fmt_steps(steps: float | None) -> str:
    return "—" if steps is None else f"{int(steps):,}"


# ---------------------------------------------------------------------------------------------------
# Plots.


def _draw_curves(ax, curves: dict[int, Curve], title: str) -> None:
    for index, curve in enumerate(curves.values()):
        ax.plot(
            curve.env_steps,
            curve.returns,
            color="tab:blue",
            alpha=0.3,
            linewidth=0.8,
            label="each seed" if index == 0 else None,
        )
    steps = np.unique(np.concatenate([c.env_steps for c in curves.values()]))
    at_step = [
        [c.returns[c.env_steps == s][0] for c in curves.values() if np.any(c.env_steps == s)]
        for s in steps
    ]
    ax.fill_between(
        steps,
        [min(v) for v in at_step],
        [max(v) for v in at_step],
        color="tab:blue",
        alpha=0.2,
        linewidth=0,
        label="min–max across seeds",
    )
    ax.plot(
        steps,
        [np.mean(v) for v in at_step],
        color="tab:blue",
        marker="o" if len(steps) == 1 else None,
        label="mean across seeds",
    )
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("greedy evaluation return")
    ax.grid(alpha=0.3)


def save_curve(path: str | Path, curves: dict[int, Curve], title: str) -> None:
    """Saves a PNG of greedy-evaluation curves: each seed faint, the min–max band and the mean.

    Args:
      path: the PNG to write.
      curves: seed -> :class:`Curve` (as :func:`evaluation_curves` returns), at least one.
      title: the plot's title.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=110)
    ax = fig.subplots()
    _draw_curves(ax, curves, title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def _save_grid(path: Path, all_curves: dict[str, dict[int, Curve]]) -> None:
    from matplotlib.figure import Figure

    columns = min(3, len(all_curves))
    rows = math.ceil(len(all_curves) / columns)
    fig = Figure(figsize=(4.5 * columns, 3.4 * rows), dpi=100)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, (name, curves) in zip(axes, all_curves.items(), strict=False):
        _draw_curves(ax, curves, name)
    for ax in axes[len(all_curves) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


# ---------------------------------------------------------------------------------------------------
# The report.


def write_report(
    suite_workdir: str | Path,
    *,
    references: dict[str, aggregate.ReferenceScore] | None = None,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Path:
    """Writes ``report.md``, ``curves/*.png`` and ``curves.png`` in a suite workdir.

    Args:
      suite_workdir: the directory holding ``results.json`` and the environments' workdirs.
      references: environment name -> normalisation ends; None reads
        :func:`mz_jax.aggregate.reference_scores` (the shipped data file).
      num_resamples: bootstrap resamples for the confidence intervals.
      confidence: the intervals' coverage.
      seed: seeds the bootstrap (the same seed writes the same report).

    Returns:
      The path of ``report.md``.
    """
    suite_workdir = Path(suite_workdir)
    results = load_results(suite_workdir)
    references = aggregate.reference_scores() if references is None else references
    environments: dict[str, dict] = results["environments"]
    num_seeds = results.get("num_seeds")
    seed_count = lambda entry: num_seeds or len(entry.get("seeds") or [])

    complete = [name for name, e in environments.items() if e.get("done") is True]
    incomplete = [name for name in environments if name not in complete]

    # Learning curves.
    curve_dir = suite_workdir / "curves"
    all_curves: dict[str, dict[int, Curve]] = {}
    for name, entry in environments.items():
        workdir = entry.get("workdir")
        if isinstance(workdir, str):
            seeds = results.get("seeds") or [0]
            curves = evaluation_curves(suite_workdir / workdir, default_seed=seeds[0])
            if curves:
                all_curves[name] = curves
    curve_files = {}
    if all_curves:
        curve_dir.mkdir(parents=True, exist_ok=True)
        for name, curves in all_curves.items():
            curve_files[name] = Path("curves") / f"{sanitise(name)}.png"
            save_curve(suite_workdir / curve_files[name], curves, name)
        _save_grid(suite_workdir / "curves.png", all_curves)

    # The table.
    lines = [
        f"# Suite report: {results.get('suite', suite_workdir.name)}",
        "",
        f"Seeds: {results.get('seeds', '—')}. Returns are mean greedy-evaluation returns; "
        "“final” is the last evaluation of a run, “best” its highest. Normalised = (return − random)"
        " / (reference − random), with the random and reference scores listed below.",
        "",
        "| Environment | Status | Seeds done | Final return (mean ± std) | Final return (min – max)"
        " | Best return (mean) | Normalised final (mean) | Env steps | Wall time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in environments.items():
        finals, bests = _final_returns(entry), _best_returns(entry)
        if len(finals) >= 2:
            spread = f"{_fmt(float(np.mean(finals)))} ± {_fmt(float(np.std(finals, ddof=1)))}"
        else:
            spread = _fmt(finals[0]) if finals else "—"
        low_high = f"{_fmt(min(finals))} – {_fmt(max(finals))}" if finals else "—"
        normalised = "—"
        if finals and name in references:
            ref = references[name]
            normalised = _fmt(
                float(
                    np.mean(aggregate.normalize(finals, random=ref.random, reference=ref.reference))
                )
            )
        lines.append(
            f"| {name} | {'done' if name in complete else 'incomplete'} "
            f"| {len(finals)}/{seed_count(entry)} | {spread} | {low_high} "
            f"| {_fmt(float(np.mean(bests))) if bests else '—'} | {normalised} "
            f"| {_fmt_steps(_number(entry.get('env_steps')))} "
            f"| {_fmt_seconds(_number(entry.get('wall_s')))} |"
        )
    lines += [
        "",
        "Mean ± sample standard deviation (ddof = 1) across seeds; “—”: no value (no finished seed, "
        "or no reference score for the environment).",
        "",
    ]

    lines += _aggregate_section(
        environments,
        complete,
        references,
        num_resamples=num_resamples,
        confidence=confidence,
        seed=seed,
    )

    if incomplete:
        lines += [
            "## Incomplete environments",
            "",
            "Not finished (stopped or crashed); shown above with what they logged, left out of the "
            "aggregate scores:",
            "",
            *[f"- {name}" for name in incomplete],
            "",
        ]

    lines += ["## Learning curves", ""]
    if curve_files:
        lines += [
            "Greedy-evaluation return against environment steps: the line is the mean across "
            "seeds, the band spans the minimum to the maximum across seeds, and the faint lines "
            "are the individual seeds.",
            "",
            "![all environments](curves.png)",
            "",
            *[f"![{name}]({path.as_posix()})\n" for name, path in curve_files.items()],
        ]
    no_curve = [name for name in environments if name not in curve_files]
    if no_curve:
        lines += [f"No evaluation records (metrics.jsonl) for: {', '.join(no_curve)}.", ""]

    path = suite_workdir / "report.md"
    path.write_text("\n".join(lines))
    return path


def _aggregate_section(
    environments: dict[str, dict],
    complete: list[str],
    references: dict[str, aggregate.ReferenceScore],
    *,
    num_resamples: int,
    confidence: float,
    seed: int,
) -> list[str]:
    """The aggregate scores, what went into them, and the normalisation's sources."""
    percent = f"{100 * confidence:g}%"
    lines = ["## Aggregate scores", ""]
    normalised = [name for name in complete if name in references]
    not_normalised = [name for name in complete if name not in references]
    finals = {name: _final_returns(environments[name]) for name in normalised}
    without_runs = [name for name in normalised if not finals[name]]
    tasks = [name for name in normalised if finals[name]]
    if not tasks:
        lines += ["No finished environment with a reference score: nothing to aggregate.", ""]
    else:
        num_runs = min(len(finals[name]) for name in tasks)
        scores = np.stack(
            [
                aggregate.normalize(
                    finals[name][:num_runs],
                    random=references[name].random,
                    reference=references[name].reference,
                )
                for name in tasks
            ],
            axis=1,
        )
        estimates = aggregate.aggregate_with_ci(
            scores, num_resamples=num_resamples, confidence=confidence, seed=seed
        )
        lines += [
            f"Normalised final returns of {len(tasks)} environment(s) × {num_runs} seed(s): "
            f"{', '.join(tasks)}. Mean and median are over the environments' mean scores; the "
            "interquartile mean (IQM) is the 25% trimmed mean of all seed × environment scores "
            f"(Agarwal et al., 2021). {percent} confidence intervals: stratified bootstrap (seeds "
            f"resampled within each environment, {num_resamples} resamples, percentile interval).",
            "",
            f"| Aggregate | Estimate | {percent} CI |",
            "|---|---|---|",
        ]
        labels = {"mean": "Mean", "median": "Median", "iqm": "IQM"}
        for key, estimate in estimates.items():
            lines.append(
                f"| {labels[key]} | {estimate.value:.3f} | [{estimate.low:.3f}, {estimate.high:.3f}] |"
            )
        lines.append("")
        uneven = [name for name in tasks if len(finals[name]) > num_runs]
        if uneven:
            lines += [
                f"Seeds differ across environments: the first {num_runs} finished seed(s) of each "
                f"are used (fewer finished elsewhere); trimmed: {', '.join(uneven)}.",
                "",
            ]
    if not_normalised:
        lines += [
            "Not normalised (no reference score in the data file), left out: "
            f"{', '.join(not_normalised)}.",
            "",
        ]
    if without_runs:
        lines += [f"No finished seed, left out: {', '.join(without_runs)}.", ""]
    used = [name for name in environments if name in references]
    if used:
        lines += [
            "### Normalisation",
            "",
            "| Environment | Random | Reference | Random: source | Reference: source |",
            "|---|---|---|---|---|",
            *[
                f"| {name} | {references[name].random:g} | {references[name].reference:g} "
                f"| {references[name].random_source} | {references[name].reference_source} |"
                for name in used
            ],
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mz_jax.report",
        description="Regenerates report.md and the learning-curve PNGs of an `mz-jax suite` run.",
    )
    parser.add_argument("suite_workdir", help="the suite's --workdir (holding results.json)")
    parser.add_argument("--references", default=None, help="a reference-score JSON file")
    parser.add_argument("--num-resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    references = None if args.references is None else aggregate.reference_scores(args.references)
    path = write_report(
        args.suite_workdir,
        references=references,
        num_resamples=args.num_resamples,
        seed=args.seed,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
