"""Aggregate scores over a suite of tasks, with stratified bootstrap confidence intervals.

Follows Agarwal et al. (2021), "Deep Reinforcement Learning at the Edge of the Statistical Precipice"
(NeurIPS), as implemented in their library rliable (``rliable/metrics.py``, ``rliable/library.py``):

* scores are a ``[num_runs, num_tasks]`` matrix of normalised scores (one run = one seed);
* the **mean** and **median** are taken over the tasks' mean scores (each task's runs averaged
  first); the **interquartile mean** (IQM) is the 25% trimmed mean of all ``num_runs x num_tasks``
  scores together (``scipy.stats.trim_mean(scores, 0.25, axis=None)``);
* a confidence interval comes from the **stratified bootstrap**: runs are resampled with replacement
  within each task (never across tasks), the statistic is recomputed on each resample, and the
  interval is the percentile interval of those values (rliable's default ``method='percentile'``).

The algorithms are rliable's; the code is ours. rliable pulls in ``arch``, ``pandas`` and
``seaborn`` for what here is one short function each, so it is not a dependency: this module needs
numpy alone, computes all resamples at once (``[num_resamples, num_runs, num_tasks]``), and is
deterministic given its seed.

Normalisation, ``(score - random) / (reference - random)``, uses the random and reference scores of
``mz_jax/suite/reference_scores.json`` (:func:`reference_scores`), each with its source.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

# ---------------------------------------------------------------------------------------------------
# Normalisation and reference scores.


def normalize(score: Any, *, random: float, reference: float) -> Any:
    """Maps ``random`` to 0 and ``reference`` to 1: ``(score - random) / (reference - random)``.

    Args:
      score: a number or an array of them.
      random: the uniformly random policy's score.
      reference: the score that counts as 1 (a published agent's, or the task's maximum).

    Returns:
      The normalised score(s): a float for a number, an array for an array.

    Raises:
      ValueError: if ``random`` or ``reference`` is not a finite number, or they are equal.
    """
    for name, value in (("random", random), ("reference", reference)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise ValueError(f"{name} must be a number, got {value!r}.")
        if not np.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}.")
    if reference == random:
        raise ValueError(
            f"reference ({reference!r}) equals random ({random!r}): the normalisation "
            "(score - random) / (reference - random) is undefined."
        )
    normalised = (np.asarray(score, np.float64) - random) / (reference - random)
    return float(normalised) if normalised.ndim == 0 else normalised


class ReferenceScore(NamedTuple):
    """The two ends of one environment's normalisation, with where each comes from.

    Attributes:
      random: the uniformly random policy's mean evaluation return (normalised to 0).
      reference: the mean evaluation return normalised to 1.
      random_source: where ``random`` comes from (a measurement and how to repeat it, or a citation).
      reference_source: where ``reference`` comes from (paper and table, or URL).
    """

    random: float
    reference: float
    random_source: str
    reference_source: str


_REFERENCE_FIELDS = ReferenceScore._fields


def reference_scores(path: str | Path | None = None) -> dict[str, ReferenceScore]:
    """Reads the reference-score data file: environment name -> :class:`ReferenceScore`.

    Args:
      path: a JSON file of the same layout (``{"environments": {name: {"random": ..., "reference":
        ..., "random_source": ..., "reference_source": ...}}}``); None reads the one shipped in
        ``mz_jax/suite/reference_scores.json``.

    Returns:
      The entries, in the file's order.

    Raises:
      ValueError: if the file is not valid JSON or an entry lacks a field, has a non-finite or
        non-numeric score, an empty source, or ``reference == random``.
    """
    if path is None:
        source = resources.files("mz_jax.suite").joinpath("reference_scores.json")
        label = "mz_jax/suite/reference_scores.json"
    else:
        source = Path(path)
        label = str(path)
    try:
        data = json.loads(source.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{label} is not valid JSON: {error}") from error
    environments = data.get("environments") if isinstance(data, dict) else None
    if not isinstance(environments, dict):
        raise ValueError(f"{label} must hold an object with an 'environments' mapping.")
    entries = {}
    for name, entry in environments.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{label}: the entry of {name!r} must be an object, got {entry!r}.")
        missing = [field for field in _REFERENCE_FIELDS if field not in entry]
        if missing:
            raise ValueError(f"{label}: the entry of {name!r} lacks {missing}.")
        for field in ("random", "reference"):
            value = entry[field]
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not np.isfinite(value)
            ):
                raise ValueError(
                    f"{label}: {name!r} {field} must be a finite number, got {value!r}."
                )
        for field in ("random_source", "reference_source"):
            if not isinstance(entry[field], str) or not entry[field].strip():
                raise ValueError(f"{label}: {name!r} {field} must be a non-empty string.")
        if entry["reference"] == entry["random"]:
            raise ValueError(
                f"{label}: {name!r} has reference == random == {entry['random']!r}; it could not "
                "be normalised."
            )
        entries[name] = ReferenceScore(
            random=float(entry["random"]),
            reference=float(entry["reference"]),
            random_source=entry["random_source"],
            reference_source=entry["reference_source"],
        )
    return entries


# ---------------------------------------------------------------------------------------------------
# Point estimates.


def _check_scores(scores: Any) -> np.ndarray:
    """``scores`` as a float64 ``[num_runs, num_tasks]`` array, or a ValueError saying what is wrong."""
    array = np.asarray(scores, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(
            f"scores must be a 2-D array [num_runs, num_tasks], got shape {array.shape}."
        )
    num_runs, num_tasks = array.shape
    if num_runs < 1 or num_tasks < 1:
        raise ValueError(
            f"scores needs at least 1 run and 1 task, got shape {array.shape} "
            "[num_runs, num_tasks]."
        )
    if not np.all(np.isfinite(array)):
        bad = [tuple(int(i) for i in index) for index in np.argwhere(~np.isfinite(array))]
        raise ValueError(
            f"scores must be finite; non-finite values at [run, task] {bad[:10]}"
            f"{' ...' if len(bad) > 10 else ''}."
        )
    return array


def interquartile_mean(scores: Any) -> float:
    """The mean of the middle half of all values: the 25% trimmed mean of the flattened array.

    Equal to ``scipy.stats.trim_mean(scores, 0.25, axis=None)``: ``int(0.25 * n)`` values are cut
    from each end of the sorted ``n`` values.

    Args:
      scores: an array of any shape with at least one value, all finite.

    Returns:
      The interquartile mean.
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("interquartile_mean needs at least one value, got an empty array.")
    if not np.all(np.isfinite(values)):
        raise ValueError("interquartile_mean needs finite values; got NaN or infinity.")
    return float(_trimmed_mean_last_axis(values))


def _trimmed_mean_last_axis(values: np.ndarray) -> np.ndarray:
    cut = int(0.25 * values.shape[-1])
    ordered = np.sort(values, axis=-1)
    return ordered[..., cut : values.shape[-1] - cut].mean(axis=-1)


def aggregate_mean(scores: np.ndarray) -> np.ndarray:
    """Mean over tasks of each task's mean score; ``[..., num_runs, num_tasks] -> [...]``."""
    return scores.mean(axis=-2).mean(axis=-1)


def aggregate_median(scores: np.ndarray) -> np.ndarray:
    """Median over tasks of each task's mean score; ``[..., num_runs, num_tasks] -> [...]``."""
    return np.median(scores.mean(axis=-2), axis=-1)


def aggregate_iqm(scores: np.ndarray) -> np.ndarray:
    """Interquartile mean of all runs and tasks together; ``[..., num_runs, num_tasks] -> [...]``."""
    return _trimmed_mean_last_axis(scores.reshape(*scores.shape[:-2], -1))


AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": aggregate_mean,
    "median": aggregate_median,
    "iqm": aggregate_iqm,
}
"""The aggregate statistics by name; each maps ``[..., num_runs, num_tasks]`` to ``[...]``."""


def aggregate(scores: Any) -> dict[str, float]:
    """The mean, median and interquartile mean of a ``[num_runs, num_tasks]`` score matrix.

    Args:
      scores: ``[num_runs, num_tasks]`` finite (normalised) scores.

    Returns:
      ``{"mean": ..., "median": ..., "iqm": ...}`` as rliable defines them (see the module docstring).
    """
    array = _check_scores(scores)
    return {name: float(statistic(array)) for name, statistic in AGGREGATES.items()}


# ---------------------------------------------------------------------------------------------------
# Stratified bootstrap.


def stratified_resamples(scores: Any, *, num_resamples: int, seed: int = 0) -> np.ndarray:
    """Bootstrap resamples of a score matrix, drawing runs with replacement within each task.

    Args:
      scores: ``[num_runs, num_tasks]`` finite scores.
      num_resamples: B, how many resamples.
      seed: seeds ``numpy.random.default_rng``; the same seed gives the same resamples.

    Returns:
      ``[B, num_runs, num_tasks]``: in resample ``b``, column ``t`` holds ``num_runs`` values drawn
      with replacement from column ``t`` of ``scores`` (and from no other column).
    """
    array = _check_scores(scores)
    if isinstance(num_resamples, bool) or not isinstance(num_resamples, int) or num_resamples < 1:
        raise ValueError(f"num_resamples must be a positive int, got {num_resamples!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}.")
    num_runs, num_tasks = array.shape
    run_index = np.random.default_rng(seed).integers(
        0, num_runs, size=(num_resamples, num_runs, num_tasks)
    )
    # Pairing each drawn run index with its own column keeps every draw inside its task.
    return array[run_index, np.arange(num_tasks)]


def stratified_bootstrap_ci(
    scores: Any,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile confidence interval for ``statistic(scores)`` by the stratified bootstrap.

    As rliable's ``get_interval_estimates(..., method='percentile')`` with ``StratifiedBootstrap``:
    runs are resampled with replacement within each task, and the interval spans the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the statistic over resamples.

    Args:
      scores: ``[num_runs, num_tasks]`` finite scores.
      statistic: maps ``[B, num_runs, num_tasks]`` to ``[B]`` (all resamples at once), like the
        functions of :data:`AGGREGATES`.
      num_resamples: B, bootstrap resamples.
      confidence: the interval's coverage, in (0, 1).
      seed: seeds the resampling; the same seed gives the same interval.

    Returns:
      ``(low, high)``.
    """
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    resamples = stratified_resamples(scores, num_resamples=num_resamples, seed=seed)
    values = np.asarray(statistic(resamples), dtype=np.float64)
    if values.shape != (num_resamples,):
        raise ValueError(
            f"statistic must map [B, num_runs, num_tasks] = {resamples.shape} to [B] = "
            f"({num_resamples},) (reduce over the last two axes only), got shape {values.shape}."
        )
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


class Estimate(NamedTuple):
    """A point estimate with its confidence interval.

    Attributes:
      value: the statistic on the scores.
      low: the interval's lower end.
      high: the interval's upper end.
    """

    value: float
    low: float
    high: float


def aggregate_with_ci(
    scores: Any, *, num_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> dict[str, Estimate]:
    """Each statistic of :data:`AGGREGATES` with its stratified bootstrap confidence interval.

    Args:
      scores: ``[num_runs, num_tasks]`` finite (normalised) scores.
      num_resamples: bootstrap resamples (shared by the statistics).
      confidence: the intervals' coverage.
      seed: seeds the resampling.

    Returns:
      ``{"mean": Estimate, "median": Estimate, "iqm": Estimate}``.
    """
    array = _check_scores(scores)
    estimates = {}
    for name, statistic in AGGREGATES.items():
        low, high = stratified_bootstrap_ci(
            array, statistic, num_resamples=num_resamples, confidence=confidence, seed=seed
        )
        estimates[name] = Estimate(value=float(statistic(array)), low=low, high=high)
    return estimates


# ---------------------------------------------------------------------------------------------------
# Games won.


def wilson_interval(
    successes: int, trials: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """The Wilson score interval of a proportion: ``successes`` of ``trials`` games won.

    With p = successes / trials, n = trials and z the standard normal quantile of
    ``(1 + confidence) / 2``::

        (p + z^2 / 2n -+ z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n)

    (Wilson, 1927). Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or
    n successes, which is where a strong agent's counts lie.

    Raises:
      ValueError: unless ``0 <= successes <= trials``, ``trials >= 1`` (integers) and
        ``0 < confidence < 1``.
    """
    for name, value in (("successes", successes), ("trials", trials)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"{name} must be an int, got {value!r}.")
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(
            f"successes = {successes}, trials = {trials}: allowed 0 <= successes <= trials, "
            "trials >= 1."
        )
    if isinstance(confidence, bool) or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    n, p = float(trials), successes / trials
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return float(max((centre - half) / scale, 0.0)), float(min((centre + half) / scale, 1.0))
