"""A suite's games against an opponent: checking a suite entry's ``opponent`` before anything
trains, and playing each seed's final agent against it once the environment is trained.

Of N games an agent moves first in the first ``(N + 1) // 2`` and second in the others
(:func:`mz_jax.training.evaluate.evaluate`); the counts by seat are :func:`mz_jax.mcts.baseline.outcome_counts`.
Used by :mod:`mz_jax.suite.runner`, which records them in ``results.json``; :mod:`mz_jax.suite.report` shows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import jax

from mz_jax.envs import make_env
from mz_jax.mcts import baseline
from mz_jax.run.agent import Agent
from mz_jax.run.checkpoint import CheckpointError

DEFAULT_OPPONENT_EPISODES = 200
"""Games per seed against a suite entry's opponent unless it says otherwise."""


class OpponentEntry(Protocol):
    """What these functions read of a suite entry (:class:`mz_jax.suite.runner.SuiteEntry`)."""

    env: str
    opponent: str | None
    opponent_episodes: int


def check_opponent(entry: OpponentEntry, *, where: str | None = None) -> None:
    """Checks an entry's ``opponent`` and ``opponent_episodes`` (nothing to check without one).

    Args:
      entry: the suite entry.
      where: how error messages name the entry; default its environment.

    Raises:
      ValueError: an opponent :func:`mz_jax.mcts.baseline.parse_opponent` refuses, an opponent that
        cannot play the entry's environment (:func:`mz_jax.mcts.baseline.check_opponent_env`: a
        single-player environment, ``mcts:N`` for a game that is not pgx's, ``pip_count`` for
        another game than ``pgx:backgammon``), or ``opponent_episodes`` other than an integer >= 2
        (a game in each seat), each naming the field, its value and what is allowed.
    """
    if entry.opponent is None:
        return
    where = entry.env if where is None else where
    try:
        baseline.parse_opponent(entry.opponent)
    except ValueError:
        raise ValueError(
            f"{where}: 'opponent' = {entry.opponent!r} is invalid: allowed "
            f"{baseline.ALLOWED_OPPONENTS}"
        ) from None
    episodes = entry.opponent_episodes
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 2:
        raise ValueError(
            f"{where}: 'opponent_episodes' = {episodes!r} is invalid: allowed an integer >= 2 "
            "(games per seed, half of them moving first)"
        )
    env = make_env(entry.env)  # an unknown name fails here, listing close matches
    baseline.check_opponent_env(env, entry.opponent, field=f"{where}: 'opponent' =")


def _has_opponent_results(row: dict, entry: OpponentEntry) -> bool:
    """Whether a seed's row of results.json holds its games against the entry's opponent."""
    games = row.get("opponent")
    return (
        isinstance(games, dict)
        and games.get("name") == entry.opponent
        and games.get("episodes") == entry.opponent_episodes
    )


def _count_line(counts: dict[str, int]) -> str:
    line = f"{counts['wins']} / {counts['draws']} / {counts['losses']}"
    return line + (f" ({counts['unfinished']} unfinished)" if counts["unfinished"] else "")


def play_opponent(
    entry: OpponentEntry,
    record: dict,
    env_workdir: Path,
    *,
    max_steps: int,
    save: Callable[[], None],
    prefix: str,
) -> bool:
    """Plays each seed's final agent against the entry's opponent (if it has one); writes the
    counts in ``record``.

    Seeds whose row already holds games against this opponent (same name and number of games) are
    not played again; ``save`` runs after each seed, so a run killed here loses at most one seed's
    games. Seed ``s`` plays its games with ``jax.random.key(s)``.

    Args:
      entry: the suite entry.
      record: the environment's results.json record; each row of ``record["seeds"]`` gains
        ``"opponent"``: ``{"name", "episodes", "max_steps"}`` and, per seat of
        :data:`mz_jax.mcts.baseline.SEATS`, the wins, draws, losses and unfinished games.
      env_workdir: the environment's (multi-seed) training run.
      max_steps: steps a game may last (the run's ``eval_max_steps``).
      save: writes results.json.
      prefix: starts the progress lines (``[i/n] env``).

    Returns:
      True if every seed has its games; False if an agent could not be restored (the error is
      printed and kept in ``record["opponent_error"]``; the next run tries again).
    """
    if entry.opponent is None:
        return True
    rows = record.get("seeds") or []
    missing = [i for i, row in enumerate(rows) if not _has_opponent_results(row, entry)]
    if not missing:
        return True
    print(
        f"{prefix}: {len(missing)} seed(s) against {entry.opponent}, {entry.opponent_episodes} "
        "games each (wins / draws / losses)",
        flush=True,
    )
    for index in missing:
        row = rows[index]
        try:
            agent = Agent.restore(env_workdir, seed_index=index)
        except (FileNotFoundError, CheckpointError) as error:
            record["opponent_error"] = str(error)
            save()
            print(f"{prefix}: games against {entry.opponent} failed: {error}", flush=True)
            return False
        started = time.monotonic()
        result = jax.device_get(
            agent.evaluate(
                jax.random.key(row["seed"]),
                num_episodes=entry.opponent_episodes,
                max_steps=max_steps,
                opponent=entry.opponent,
            )
        )
        counts = baseline.outcome_counts(result.episode_return, result.completed)
        row["opponent"] = {
            "name": entry.opponent,
            "episodes": entry.opponent_episodes,
            "max_steps": max_steps,
            **counts,
        }
        record.pop("opponent_error", None)
        save()
        print(
            f"{prefix}: seed {row['seed']}: total {_count_line(counts['total'])}, moving first "
            f"{_count_line(counts['moving_first'])}, moving second "
            f"{_count_line(counts['moving_second'])} ({time.monotonic() - started:.0f} s)",
            flush=True,
        )
    return True
