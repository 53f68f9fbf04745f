"""Aggregate scores and stratified bootstrap intervals (mz_jax.suite.aggregate), against hand-worked values,
references written differently (scipy, sorted lists) and properties of the bootstrap."""

import statistics

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from mz_jax.suite import aggregate

# ---------------------------------------------------------------------------------------------------
# normalize.


def test_normalize_by_hand():
    assert aggregate.normalize(5.0, random=1.0, reference=9.0) == 0.5
    # Negative returns (MountainCar-like): -155 is halfway from -200 to -110.
    assert aggregate.normalize(-155.0, random=-200.0, reference=-110.0) == pytest.approx(0.5)
    assert aggregate.normalize(1.0, random=1.0, reference=9.0) == 0.0
    assert aggregate.normalize(9.0, random=1.0, reference=9.0) == 1.0
    np.testing.assert_allclose(
        aggregate.normalize([1.0, 3.0, 13.0], random=1.0, reference=9.0), [0.0, 0.25, 1.5]
    )


def test_normalize_refuses_equal_ends_and_names_them():
    with pytest.raises(ValueError, match=r"reference \(2\.5\) equals random \(2\.5\)"):
        aggregate.normalize(3.0, random=2.5, reference=2.5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"random": float("nan"), "reference": 1.0}, "random must be finite"),
        ({"random": 0.0, "reference": "1"}, "reference must be a number"),
    ],
)
def test_normalize_refuses_bad_ends(kwargs, match):
    with pytest.raises(ValueError, match=match):
        aggregate.normalize(0.5, **kwargs)


# ---------------------------------------------------------------------------------------------------
# Interquartile mean.


def test_interquartile_mean_by_hand():
    # 8 values; sorted: -50, 1, 2, 3, 4, 5, 6, 100; the middle half is 2, 3, 4, 5.
    scores = np.array([[1.0, 100.0], [2.0, 3.0], [4.0, 5.0], [6.0, -50.0]])
    assert aggregate.interquartile_mean(scores) == 3.5
    # 5 values: int(0.25 * 5) = 1 cut from each end of 1, 2, 3, 10, 100.
    assert aggregate.interquartile_mean([10.0, 1.0, 3.0, 2.0, 100.0]) == 5.0
    # Fewer than 4 values: nothing is cut.
    assert aggregate.interquartile_mean([1.0, 2.0, 6.0]) == 3.0


def _iqm_by_sorted_list(values: list[float]) -> float:
    """Middle half of a sorted Python list, for sizes divisible by 4."""
    ordered = sorted(values)
    quarter = len(ordered) // 4
    return statistics.fmean(ordered[quarter : len(ordered) - quarter])


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda k: st.lists(
            st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
            min_size=4 * k,
            max_size=4 * k,
        )
    )
)
def test_interquartile_mean_matches_sort_and_slice(values):
    assert aggregate.interquartile_mean(np.array(values).reshape(4, -1)) == pytest.approx(
        _iqm_by_sorted_list(values), rel=1e-9, abs=1e-9
    )


@pytest.mark.parametrize("shape", [(3, 5), (7, 2), (10, 9), (1, 1)])
def test_interquartile_mean_matches_scipy_trim_mean(shape):
    scores = np.random.default_rng(sum(shape)).normal(size=shape)
    assert aggregate.interquartile_mean(scores) == pytest.approx(
        scipy.stats.trim_mean(scores, 0.25, axis=None), rel=1e-12
    )


def test_interquartile_mean_errors():
    with pytest.raises(ValueError, match="at least one value"):
        aggregate.interquartile_mean([])
    with pytest.raises(ValueError, match="finite"):
        aggregate.interquartile_mean([1.0, float("nan")])


# ---------------------------------------------------------------------------------------------------
# Mean, median, IQM of a [num_runs, num_tasks] matrix.

# 2 runs x 3 tasks; task means 2, 15, 2.
SCORES = np.array([[1.0, 10.0, 0.0], [3.0, 20.0, 4.0]])


def test_aggregate_by_hand():
    result = aggregate.aggregate(SCORES)
    assert result["mean"] == pytest.approx(19.0 / 3.0)  # (2 + 15 + 2) / 3
    assert result["median"] == 2.0  # of the task means, not of the 6 scores (3.5)
    # All 6 scores sorted: 0, 1, 3, 4, 10, 20; int(1.5) = 1 cut from each end.
    assert result["iqm"] == 4.5


def test_aggregates_map_leading_axes():
    shifted = SCORES + 1.0
    batch = np.stack([SCORES, shifted])  # [2, 2, 3]
    np.testing.assert_allclose(aggregate.aggregate_mean(batch), [19.0 / 3.0, 22.0 / 3.0])
    np.testing.assert_allclose(aggregate.aggregate_median(batch), [2.0, 3.0])
    np.testing.assert_allclose(aggregate.aggregate_iqm(batch), [4.5, 5.5])


@pytest.mark.parametrize(
    "scores, match",
    [
        (np.ones(4), "2-D"),
        (np.ones((2, 3, 4)), "2-D"),
        (np.ones((0, 3)), "at least 1 run"),
        (np.ones((3, 0)), "at least 1 run"),
        (np.array([[1.0, np.nan], [2.0, 3.0]]), r"non-finite values at \[run, task\] \[\(0, 1\)\]"),
        (np.array([[1.0, 2.0], [np.inf, 3.0]]), r"\[\(1, 0\)\]"),
    ],
)
def test_aggregate_errors(scores, match):
    with pytest.raises(ValueError, match=match):
        aggregate.aggregate(scores)
    with pytest.raises(ValueError, match=match):
        aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_mean)


# ---------------------------------------------------------------------------------------------------
# Stratified bootstrap.


def _noisy_scores(num_runs: int, num_tasks: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(loc=np.linspace(0.0, 1.0, num_tasks), scale=0.5, size=(num_runs, num_tasks))


@pytest.mark.parametrize("name", ["mean", "median", "iqm"])
def test_interval_contains_the_point_estimate(name):
    scores = _noisy_scores(5)
    statistic = aggregate.AGGREGATES[name]
    low, high = aggregate.stratified_bootstrap_ci(scores, statistic, num_resamples=500)
    assert low < float(statistic(scores)) < high


@pytest.mark.parametrize("name", ["mean", "iqm"])
def test_interval_shrinks_as_runs_grow(name):
    statistic = aggregate.AGGREGATES[name]
    widths = []
    for num_runs in (5, 50, 500):
        low, high = aggregate.stratified_bootstrap_ci(
            _noisy_scores(num_runs), statistic, num_resamples=500
        )
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2] > 0.0
    # The standard error falls as 1 / sqrt(runs): 10x the runs, about a third of the width.
    assert widths[2] < 0.6 * widths[1]


def test_interval_is_degenerate_when_every_task_has_equal_runs():
    # Each task's runs are all the same (dyadic values, so every mean is exact).
    scores = np.tile([0.5, 2.0, -1.0], (4, 1))
    for name, by_hand in (("mean", 0.5), ("median", 0.5), ("iqm", 0.5)):
        low, high = aggregate.stratified_bootstrap_ci(scores, aggregate.AGGREGATES[name])
        assert low == high == by_hand, name


def test_resamples_stay_within_their_task():
    # Disjoint values per task: a draw from another task would show.
    scores = np.array([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0], [3.0, 30.0, 300.0]])
    resamples = aggregate.stratified_resamples(scores, num_resamples=300, seed=1)
    assert resamples.shape == (300, 3, 3)
    for task in range(3):
        drawn = set(resamples[:, :, task].ravel().tolist())
        assert drawn == set(scores[:, task].tolist())  # only its own runs, and all of them
    # Runs are drawn independently per task, not as whole rows: task 1's run index differs from
    # task 0's somewhere.
    assert np.any(resamples[:, :, 1] / 10.0 != resamples[:, :, 0])


def test_interval_of_a_constant_task_ignores_the_other_tasks():
    # Task 0's runs are all 7; task 1's vary. A statistic of task 0 alone must stay exactly 7
    # unless resampling mixes tasks.
    scores = np.array([[7.0, -3.0], [7.0, 50.0], [7.0, 11.0], [7.0, 0.5]])
    task0_min = lambda x: x[..., 0].min(axis=-1)
    task0_max = lambda x: x[..., 0].max(axis=-1)
    assert aggregate.stratified_bootstrap_ci(scores, task0_min) == (7.0, 7.0)
    assert aggregate.stratified_bootstrap_ci(scores, task0_max) == (7.0, 7.0)
    low, high = aggregate.stratified_bootstrap_ci(scores, lambda x: x[..., 1].mean(axis=-1))
    assert -3.0 <= low < high <= 50.0


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default percentile)."""
    position = q * (len(sorted_values) - 1)
    below = int(position)
    above = min(below + 1, len(sorted_values) - 1)
    return sorted_values[below] + (position - below) * (sorted_values[above] - sorted_values[below])


def test_interval_is_the_percentile_interval_of_the_resampled_statistic():
    scores = _noisy_scores(6, num_tasks=3, seed=3)
    resamples = aggregate.stratified_resamples(scores, num_resamples=400, seed=5)
    # The statistic per resample, by Python loops: mean over tasks of each task's mean.
    values = sorted(
        statistics.fmean(statistics.fmean(sample[:, t]) for t in range(3)) for sample in resamples
    )
    low, high = aggregate.stratified_bootstrap_ci(
        scores, aggregate.aggregate_mean, num_resamples=400, confidence=0.9, seed=5
    )
    assert low == pytest.approx(_quantile(values, 0.05), rel=1e-12)
    assert high == pytest.approx(_quantile(values, 0.95), rel=1e-12)


def test_interval_is_deterministic_given_the_seed():
    scores = _noisy_scores(5)
    first = aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_iqm, seed=3)
    again = aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_iqm, seed=3)
    other = aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_iqm, seed=4)
    assert first == again
    assert first != other


def test_lower_confidence_gives_a_narrower_interval():
    scores = _noisy_scores(5)
    low95, high95 = aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_mean)
    low50, high50 = aggregate.stratified_bootstrap_ci(
        scores, aggregate.aggregate_mean, confidence=0.5
    )
    assert low95 < low50 < high50 < high95


def test_aggregate_with_ci_brackets_each_point_estimate():
    scores = _noisy_scores(5)
    estimates = aggregate.aggregate_with_ci(scores, num_resamples=500)
    assert set(estimates) == {"mean", "median", "iqm"}
    by_hand_mean = statistics.fmean(statistics.fmean(scores[:, t]) for t in range(4))
    assert estimates["mean"].value == pytest.approx(by_hand_mean)
    for estimate in estimates.values():
        assert estimate.low <= estimate.value <= estimate.high


def test_bootstrap_errors():
    scores = _noisy_scores(3)
    with pytest.raises(ValueError, match=r"to \[B\]"):
        aggregate.stratified_bootstrap_ci(scores, np.mean)  # reduces the resample axis too
    with pytest.raises(ValueError, match="confidence"):
        aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_mean, confidence=1.0)
    with pytest.raises(ValueError, match="num_resamples"):
        aggregate.stratified_bootstrap_ci(scores, aggregate.aggregate_mean, num_resamples=0)
    with pytest.raises(ValueError, match="seed"):
        aggregate.stratified_resamples(scores, num_resamples=10, seed=1.5)


def test_wilson_interval_matches_published_values():
    # Wilson score intervals at 95% (Newcombe, 1998, Table I: 81 of 263 -> 0.2553-0.3662; 15 of
    # 148 -> 0.0624-0.1605; 0 of 20 -> 0-0.1611; 1 of 29 -> 0.0061-0.1718).
    for wins, games, low, high in (
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ):
        interval = aggregate.wilson_interval(wins, games)
        np.testing.assert_allclose(interval, (low, high), atol=6e-5)
    # n of n mirrors 0 of n.
    low, high = aggregate.wilson_interval(20, 20)
    assert high == 1.0 and low == pytest.approx(1 - 0.1611, abs=6e-5)
    # Wider at 99% than at 95%.
    assert (
        aggregate.wilson_interval(5, 10, confidence=0.99)[0] < aggregate.wilson_interval(5, 10)[0]
    )


@pytest.mark.parametrize("args", [(-1, 10), (11, 10), (0, 0), (1.0, 10), (True, 10), (1, 10, 1.0)])
def test_wilson_interval_refuses_impossible_counts(args):
    wins, games, *confidence = args
    with pytest.raises(ValueError):
        aggregate.wilson_interval(
            wins, games, **({"confidence": confidence[0]} if confidence else {})
        )
