"""The markdown report of a benchmark-suite run: a table, aggregate scores, the curves' PNGs.

``mz-jax suite`` calls :func:`write_report` at the end; ``mz-jax report SUITE_WORKDIR`` runs it
alone to regenerate the report. It reads ``results.json`` and the environments' ``metrics.jsonl``
(:mod:`mz_jax.suite.results`) and writes, in the suite workdir:

* ``report.md``: one table row per environment (final return across seeds, best return, normalised
  final return, env steps, wall time); the aggregate scores of the finished environments (mean,
  median and interquartile mean of normalised final returns, with stratified bootstrap 95%
  confidence intervals, :mod:`mz_jax.suite.aggregate`) and the sources of the normalisation; the
  environments left out and why; for environments that played an opponent after training
  (a suite entry's ``opponent``), each seed's win / draw / loss rates moving first, moving second
  and in total;
* ``curves/<environment>.png``: greedy-evaluation return against env steps: the mean across seeds,
  a min-max band, each seed faintly (:mod:`mz_jax.run.plots`);
* ``curves.png``: those curves side by side.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mz_jax.run import plots
from mz_jax.run.records import Curve, evaluation_curves, finite_number
from mz_jax.run.workdir import sanitise
from mz_jax.suite import aggregate
from mz_jax.suite.results import best_returns, final_returns, load_results

REPORT_FILE = "report.md"
CURVES_DIR = "curves"
CURVES_GRID_FILE = "curves.png"


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
        :func:`mz_jax.suite.aggregate.reference_scores` (the shipped data file).
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
    complete = [name for name, e in environments.items() if e.get("done") is True]
    incomplete = [name for name in environments if name not in complete]
    curve_files = _write_curves(suite_workdir, results)
    lines = _results_table(suite_workdir, results, complete, references)
    lines += _aggregate_section(
        environments,
        complete,
        references,
        num_resamples=num_resamples,
        confidence=confidence,
        seed=seed,
    )
    lines += _opponent_section(environments)
    lines += _incomplete_section(incomplete)
    lines += _curves_section(environments, curve_files)
    path = suite_workdir / REPORT_FILE
    path.write_text("\n".join(lines))
    return path


def _write_curves(suite_workdir: Path, results: dict) -> dict[str, Path]:
    """Writes ``curves/<environment>.png`` for each environment with evaluation records, and
    ``curves.png`` with them side by side; returns each one's path relative to the workdir."""
    all_curves: dict[str, dict[int, Curve]] = {}
    for name, entry in results["environments"].items():
        workdir = entry.get("workdir")
        if isinstance(workdir, str):
            seeds = results.get("seeds") or [0]
            curves = evaluation_curves(suite_workdir / workdir, default_seed=seeds[0])
            if curves:
                all_curves[name] = curves
    curve_files = {}
    if all_curves:
        (suite_workdir / CURVES_DIR).mkdir(parents=True, exist_ok=True)
        for name, curves in all_curves.items():
            curve_files[name] = Path(CURVES_DIR) / f"{sanitise(name)}.png"
            plots.save_curve(suite_workdir / curve_files[name], curves, name)
        plots.save_grid(suite_workdir / CURVES_GRID_FILE, all_curves)
    return curve_files


def _results_table(
    suite_workdir: Path,
    results: dict,
    complete: list[str],
    references: dict[str, aggregate.ReferenceScore],
) -> list[str]:
    """The report's title, and its table of one row per environment (the lines of markdown)."""
    environments: dict[str, dict] = results["environments"]
    num_seeds = results.get("num_seeds")
    seed_count = lambda entry: num_seeds or len(entry.get("seeds") or [])
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
        finals, bests = final_returns(entry), best_returns(entry)
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
            f"| {_fmt_steps(finite_number(entry.get('env_steps')))} "
            f"| {_fmt_seconds(finite_number(entry.get('wall_s')))} |"
        )
    lines += [
        "",
        "Mean ± sample standard deviation (ddof = 1) across seeds; “—”: no value (no finished seed, "
        "or no reference score for the environment).",
        "",
    ]
    return lines


def _incomplete_section(incomplete: list[str]) -> list[str]:
    """The section listing the environments left out of the aggregate scores (none: no lines)."""
    if not incomplete:
        return []
    return [
        "## Incomplete environments",
        "",
        "Not finished (stopped or crashed); shown above with what they logged, left out of the "
        "aggregate scores:",
        "",
        *[f"- {name}" for name in incomplete],
        "",
    ]


def _curves_section(environments: dict[str, dict], curve_files: dict[str, Path]) -> list[str]:
    """The learning-curves section: the grid and each environment's curve, and the environments
    without one."""
    lines = ["## Learning curves", ""]
    if curve_files:
        lines += [
            "Greedy-evaluation return against environment steps: the line is the mean across "
            "seeds, the band spans the minimum to the maximum across seeds, and the faint lines "
            "are the individual seeds.",
            "",
            f"![all environments]({CURVES_GRID_FILE})",
            "",
            *[f"![{name}]({path.as_posix()})\n" for name, path in curve_files.items()],
        ]
    no_curve = [name for name in environments if name not in curve_files]
    if no_curve:
        lines += [f"No evaluation records (metrics.jsonl) for: {', '.join(no_curve)}.", ""]
    return lines


def _fmt_rates(counts: object) -> str:
    """``win / draw / loss`` rates (percent of the games in a seat) of one seat's counts."""
    if not isinstance(counts, dict):
        return "—"
    numbers = [counts.get(k) for k in ("wins", "draws", "losses", "unfinished")]
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in numbers):
        return "—"
    games = sum(numbers)
    if not games:
        return "—"
    rates = " / ".join(f"{100 * n / games:.1f}%" for n in numbers[:3])
    return rates + (f" ({100 * numbers[3] / games:.1f}% unfinished)" if numbers[3] else "")


def _opponent_section(environments: dict[str, dict]) -> list[str]:
    """Each seed's games against its environment's opponent (results.json rows' ``"opponent"``);
    nothing if no environment has any."""
    played = {}
    for name, entry in environments.items():
        rows = [
            row
            for row in entry.get("seeds") or []
            if isinstance(row, dict) and isinstance(row.get("opponent"), dict)
        ]
        if rows or entry.get("opponent_error"):
            played[name] = rows
    if not played:
        return []
    lines = [
        "## Against an opponent",
        "",
        "After training, each seed's final agent (greedy, its newest checkpoint) played the "
        "environment's opponent: of N games it moved first in the first ⌈N / 2⌉ and second in "
        "the others. Rates are win / draw / loss, in percent of the games in that seat (a game "
        "unfinished within the step limit counts in none of the three).",
        "",
    ]
    for name, rows in played.items():
        lines += [f"### {name}", ""]
        if rows:
            lines += [
                "| Seed | Opponent | Games | Moving first (W / D / L) | Moving second (W / D / L) "
                "| Total (W / D / L) |",
                "|---|---|---|---|---|---|",
            ]
            for row in sorted(
                rows, key=lambda r: r.get("seed") if isinstance(r.get("seed"), int) else 0
            ):
                games = row["opponent"]
                lines.append(
                    f"| {row.get('seed', '—')} | {games.get('name', '—')} "
                    f"| {games.get('episodes', '—')} | {_fmt_rates(games.get('moving_first'))} "
                    f"| {_fmt_rates(games.get('moving_second'))} "
                    f"| {_fmt_rates(games.get('total'))} |"
                )
            lines.append("")
        error = environments[name].get("opponent_error")
        if error:
            lines += [f"Games against the opponent not played: {error}", ""]
    return lines


def normalised_final_scores(
    finals: dict[str, list[float]], references: dict[str, aggregate.ReferenceScore]
) -> tuple[list[str], np.ndarray] | None:
    """The environments of ``finals`` (final returns by seed) that have runs, and their normalised
    final returns ``[runs, environments]`` over the first seeds every one of them has; None if
    none has runs. Every environment must have a reference score."""
    tasks = [name for name in finals if finals[name]]
    if not tasks:
        return None
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
    return tasks, scores


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
    finals = {name: final_returns(environments[name]) for name in normalised}
    without_runs = [name for name in normalised if not finals[name]]
    normalised_scores = normalised_final_scores(finals, references)
    if normalised_scores is None:
        lines += ["No finished environment with a reference score: nothing to aggregate.", ""]
    else:
        tasks, scores = normalised_scores
        num_runs = scores.shape[0]
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
