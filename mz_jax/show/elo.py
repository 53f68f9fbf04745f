"""Elo ratings from pairwise results: the Bradley–Terry model fitted by maximum likelihood."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per unit of log odds: ``R = 400 log10(gamma)``."""


def _pair_counts(
    names: Sequence[str], scores: Mapping[tuple[str, str], Any]
) -> tuple[np.ndarray, np.ndarray]:
    """``(points [P, P], games [P, P])``: points of i against j (a draw half a point) and games."""
    index = {name: i for i, name in enumerate(names)}
    points = np.zeros((len(names), len(names)))
    games = np.zeros((len(names), len(names)))
    for (a, b), results in scores.items():
        for name in (a, b):
            if name not in index:
                raise ValueError(f"scores name {name!r}, which is not one of names {list(names)}")
        if a == b:
            raise ValueError(f"scores of {a!r} against itself: allowed pairs of two players")
        results = np.asarray(results).reshape(-1)
        if not np.isin(results, (-1, 0, 1)).all():
            raise ValueError(f"scores of {(a, b)!r} are invalid: allowed results +1, 0 and -1")
        i, j = index[a], index[b]
        won = np.sum(results == 1) + 0.5 * np.sum(results == 0)
        points[i, j] += won
        points[j, i] += len(results) - won
        games[i, j] += len(results)
        games[j, i] += len(results)
    return points, games


def _connected(games: np.ndarray) -> bool:
    reached, frontier = {0}, [0]
    while frontier:
        for j in np.flatnonzero(games[frontier.pop()]):
            if int(j) not in reached:
                reached.add(int(j))
                frontier.append(int(j))
    return len(reached) == len(games)


def _fit_log_strengths(points: np.ndarray, games: np.ndarray) -> np.ndarray:
    """The maximum-likelihood log strengths ``theta [P]`` (``theta[0] = 0``) of the Bradley–Terry
    model ``P(i beats j) = sigmoid(theta_i - theta_j)``, by Newton's method with step halving (the
    log-likelihood is concave)."""

    def log_likelihood(theta):
        diff = theta[:, None] - theta[None, :]
        return -np.sum(points * np.logaddexp(0.0, -diff))

    theta = np.zeros(len(points))
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        gradient = points.sum(axis=1) - np.sum(games * p, axis=1)
        weight = games * p * (1.0 - p)
        hessian = weight - np.diag(weight.sum(axis=1))
        step = np.zeros_like(theta)
        step[1:] = np.linalg.solve(hessian[1:, 1:], -gradient[1:])
        size, before = 1.0, log_likelihood(theta)
        while log_likelihood(theta + size * step) < before - 1e-12 and size > 1e-6:
            size /= 2
        theta = theta + size * step
        if np.max(np.abs(size * step)) < 1e-10:
            break
    return theta


def elo_ratings(names: Sequence[str], scores: Mapping[tuple[str, str], Any]) -> dict[str, float]:
    """Elo ratings fitted by maximum likelihood to pairwise results (Bradley & Terry, 1952; Elo,
    1978).

    The model: ``P(a beats b) = 1 / (1 + 10 ** ((R_b - R_a) / 400))``, each game independent, a
    draw counted as half a win to each player. Every pair that played at least once is given one
    virtual draw more, so that a player who won (or lost) every game gets a finite rating: with
    ``w`` points of a in ``n`` games against b alone, ``R_a - R_b = 400 log10((w + 1/2) / (n - w +
    1/2))``. Ratings are anchored so that ``"random"`` is 0 where it is one of ``names``, else so
    that their mean is 0.

    Args:
      names: the players, distinct.
      scores: ``{(a, b): results}`` with ``results`` an array of a's results against b, +1 win,
        0 draw, -1 loss; a pair may appear in both orders (both count).

    Returns:
      ``{name: rating}`` in Elo points, for every name.

    Raises:
      ValueError: a name in ``scores`` that is not in ``names``, a result other than +1, 0, -1,
        repeated names, or players not linked by games (their ratings would be unrelated).
    """
    names = list(names)
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"names {names!r} are invalid: allowed distinct names, at least one")
    points, games = _pair_counts(names, scores)
    played = games > 0
    points, games = points + 0.5 * played, games + played  # one virtual draw a pair
    if not _connected(games):
        raise ValueError(
            "scores do not link every player by games; ratings of unlinked players are unrelated"
        )
    ratings = ELO_PER_NAT * _fit_log_strengths(points, games)
    ratings -= ratings[names.index("random")] if "random" in names else ratings.mean()
    return {name: float(r) for name, r in zip(names, ratings, strict=True)}
