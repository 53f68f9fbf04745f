"""A baseline opponent for board games that is not random: MCTS on the true game, ``"mcts:N"``.

The search is mctx's pUCT search (:func:`mctx.muzero_policy`; AlphaZero's selection rule, Silver et
al., 2018) with the pgx game itself as the model, a uniform prior over the legal moves, and leaf
values from uniformly random rollouts to the end of the game: the classical MCTS player with random
playouts (Browne et al., 2012, "A survey of Monte Carlo tree search methods"), the usual reference
opponent of board-game agents. It needs no network and no training, and grows stronger with the
number of simulations N: ``mz-jax eval --opponent mcts:N``.

Why pUCT and not Gumbel: with a uniform prior and noisy rollout values, Gumbel MuZero's Sequential
Halving (built to improve on a learned prior with few simulations) has nothing to improve on, while
pUCT's visit counts concentrate on the best move as N grows and the move is read off them (the most
visited legal move, ties to the lowest index), as for a classical MCTS player. Two departures from
mctx's defaults, both for a uniform prior and rollout values: Q-values are normalised by the game's
known range, not by the node's own values (which stretch "every move loses, some more surely" into
[0, 1] and starve the one blocking move of visits), and every legal move of a node is tried once
before any is tried twice (UCT's rule; mctx scores an unvisited move as the worst). Measured on
hand-made connect-four positions (as in tests/test_baseline.py, 20-40 trials each): with N = 64,
mctx's defaults found the immediate win in 40-48% of the trials and these settings in 100%; with N =
200 they blocked a one-move loss in 28-73% and 88-100% (mctx's Gumbel policy, every move considered
and no noise: 40-70%). Leaf values from one rollout are noisy: more rollouts per leaf buy
reliability (``num_rollouts=4`` with N = 100 blocked in 100%).

Signs follow the game, not an assumption of alternation: the reward of an edge is that of the player
who moved, and the discount between a node and its child is +1 where the same player moves again,
-1 where the other one does, and 0 once the game is over (a finished game has value 0 and pays
nothing more). A stochastic game's chance outcomes are drawn once per expanded edge.

The names of the evaluation opponents are read and checked here (:func:`parse_opponent`,
:func:`check_opponent_env`): ``"random"``, ``"mcts:N"`` and ``"pip_count"``, the pip-count
heuristic of pgx's backgammon (:mod:`mz_jax.envs.backgammon`).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from mz_jax.envs import Env
from mz_jax.envs.pgx_adapter import PGX_PREFIX, pgx_game
from mz_jax.types import Array

ALLOWED_OPPONENTS = (
    "'random' or 'mcts:N' with N an integer >= 1, or 'pip_count' (pgx:backgammon only)"
)
"""What :func:`parse_opponent` accepts, for error messages."""

PIP_COUNT = "pip_count"
"""The pip-count heuristic of pgx's backgammon (:func:`mz_jax.envs.backgammon.pip_count_action`)."""

PIP_COUNT_ENV = "pgx:backgammon"
"""The one environment :data:`PIP_COUNT` plays."""

DEFAULT_MAX_ROLLOUT_STEPS = 1000
"""A safety bound on a rollout's length: pgx's board games end sooner (connect four within 42 moves;
chess and shogi at a limit of 512, go 19x19 of 722); a rollout cut there counts the rewards it met
(0 in board games)."""


def parse_opponent(opponent: str) -> int | None:
    """The number of simulations N of the opponent ``"mcts:N"``; None for ``"random"`` and
    ``"pip_count"``.

    Raises:
      ValueError: for anything else, naming the value and what is allowed.
    """
    if isinstance(opponent, str):
        if opponent in ("random", PIP_COUNT):
            return None
        match = re.fullmatch(r"mcts:([0-9]+)", opponent)
        if match and int(match.group(1)) >= 1:
            return int(match.group(1))
    raise ValueError(f"opponent {opponent!r} is invalid: allowed {ALLOWED_OPPONENTS}")


SEATS = ("total", "moving_first", "moving_second")
"""The groups of :func:`outcome_counts`: every game, the games the agent opened, the others."""


def outcome_counts(episode_return: Any, completed: Any) -> dict[str, dict[str, int]]:
    """Wins, draws, losses and unfinished games of an agent against an opponent, by seat.

    Reads an evaluation as :func:`mz_jax.training.evaluate.evaluate` plays it against an opponent: of N
    episodes the agent moves first in the first ``(N + 1) // 2`` and second in the others, and each
    return is the agent's (> 0 a win, 0 a draw, < 0 a loss). An episode that did not end within its
    step limit is unfinished, not a result.

    Args:
      episode_return: ``[N]`` the agent's return of each episode.
      completed: ``[N]`` whether each episode ended.

    Returns:
      ``{seat: {"wins", "draws", "losses", "unfinished"}}`` for each seat of :data:`SEATS`.
    """
    returns = np.asarray(episode_return, np.float64).reshape(-1)
    done = np.asarray(completed, bool).reshape(-1)
    first = np.arange(len(returns)) < (len(returns) + 1) // 2
    counts = {}
    for seat, rows in zip(SEATS, (np.ones_like(first), first, ~first), strict=True):
        counts[seat] = {
            "wins": int(np.sum(rows & done & (returns > 0))),
            "draws": int(np.sum(rows & done & (returns == 0))),
            "losses": int(np.sum(rows & done & (returns < 0))),
            "unfinished": int(np.sum(rows & ~done)),
        }
    return counts


def check_opponent_env(env: Env, opponent: str, *, field: str = "opponent") -> None:
    """Checks that the opponent ``opponent`` can play in ``env``.

    ``"random"`` plays any two-player environment, ``"mcts:N"`` a two-player pgx game (it searches
    the true game, :func:`game_of`), ``"pip_count"`` :data:`PIP_COUNT_ENV` alone.

    Args:
      env: the environment the agent plays in.
      opponent: the opponent's name.
      field: how error messages name the setting that holds ``opponent`` (``"--opponent"``).

    Raises:
      ValueError: one line starting ``f"{field} {opponent!r}"``, naming the environment and what
        the opponent needs.
    """
    try:
        parse_opponent(opponent)
    except ValueError:
        raise ValueError(f"{field} {opponent!r} is invalid: allowed {ALLOWED_OPPONENTS}") from None
    if env.num_players != 2:
        raise ValueError(
            f"{field} {opponent!r}: {env.name} is a single-player environment; an opponent needs "
            "a two-player game"
        )
    if opponent == PIP_COUNT and env.name != PIP_COUNT_ENV:
        raise ValueError(
            f"{field} {opponent!r}: the pip-count heuristic plays {PIP_COUNT_ENV} only, not "
            f"{env.name}"
        )
    if opponent not in ("random", PIP_COUNT) and not env.name.startswith(PGX_PREFIX):
        raise ValueError(
            f"{field} {opponent!r}: it searches the true game, so it needs a two-player pgx game "
            f"('pgx:<id>'), and {env.name} is not one"
        )


def game_of(env: Env, opponent: str) -> Any:
    """The pgx game (``pgx.Env``) behind ``env``, which the opponent ``opponent`` searches.

    Raises:
      ValueError: unless ``env`` is a two-player pgx game (``"pgx:<id>"``).
    """
    if not env.name.startswith(PGX_PREFIX) or env.num_players != 2:
        raise ValueError(
            f"opponent {opponent!r} searches the true game: it needs a two-player pgx game "
            f"('pgx:<id>'), and {env.name!r} is not one"
        )
    return pgx_game(env.name)


def mcts_action(
    rng_key: Array,
    state: Any,
    *,
    game: Any,
    num_simulations: int,
    num_rollouts: int = 1,
    max_rollout_steps: int = DEFAULT_MAX_ROLLOUT_STEPS,
    value_bound: float = 1.0,
) -> Array:
    """The move of the MCTS baseline in each of B positions; ``[B]`` int32, always legal.

    Args:
      rng_key: a PRNG key, consumed; the move is a function of the key and the positions.
      state: B positions, a pgx ``State`` with leaves ``[B, ...]``: ``current_player [B]``,
        ``legal_action_mask [B, A]``, ``rewards [B, num_players]``, ``terminated [B]``,
        ``truncated [B]``. Every position needs a legal move (an unfinished game).
      game: the game, a ``pgx.Env`` or anything with its ``step(state, action, key)`` on one
        position (no automatic reset).
      num_simulations: simulations of the search, >= 1.
      num_rollouts: random rollouts averaged for each leaf's value, >= 1.
      max_rollout_steps: a rollout stops there if the game has not ended, >= 1.
      value_bound: the largest |return| of a game (1 for a win), > 0; Q-values are normalised by
        ``[-value_bound, value_bound]`` for pUCT.

    Raises:
      ValueError: for a bad Python setting (at trace time).
    """
    for name, value in (
        ("num_simulations", num_simulations),
        ("num_rollouts", num_rollouts),
        ("max_rollout_steps", max_rollout_steps),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    if not value_bound > 0:
        raise ValueError(f"value_bound must be > 0; got {value_bound!r}")
    leaf_values = _leaf_values_fn(game, num_rollouts, max_rollout_steps)

    def recurrent_fn(params, key, action, state):
        del params
        step_key, rollout_key = jax.random.split(key)
        batch_size = action.shape[0]
        mover = state.current_player
        reached = jax.vmap(game.step)(state, action, jax.random.split(step_key, batch_size))
        was_over, over = _over(state), _over(reached)
        reward = jnp.take_along_axis(reached.rewards, mover[:, None], axis=1)[:, 0]
        sign = jnp.where(reached.current_player == mover, 1.0, -1.0)
        output = mctx.RecurrentFnOutput(
            reward=jnp.where(was_over, 0.0, reward).astype(jnp.float32),
            discount=jnp.where(was_over | over, 0.0, sign).astype(jnp.float32),
            prior_logits=_uniform_logits(reached.legal_action_mask),
            value=leaf_values(rollout_key, reached),
        )
        return output, reached

    def qtransform(tree, node_index):
        q = mctx.qtransform_by_min_max(
            tree, node_index, min_value=-float(value_bound), max_value=float(value_bound)
        )
        # UCT's rule (Kocsis and Szepesvari, 2006): every legal move once before any move twice.
        # With a uniform prior pUCT's exploration bonus is A times smaller than UCT's.
        legal = tree.children_prior_logits[node_index] > _ILLEGAL_LOGIT / 2
        return jnp.where(legal & (tree.children_visits[node_index] == 0), 1.0, q)

    root_key, search_key = jax.random.split(rng_key)
    legal = state.legal_action_mask.astype(bool)
    root = mctx.RootFnOutput(
        prior_logits=_uniform_logits(legal),
        value=leaf_values(root_key, state),
        embedding=state,
    )
    policy_output = mctx.muzero_policy(
        (),
        search_key,
        root,
        recurrent_fn,
        num_simulations,
        invalid_actions=~legal,
        qtransform=qtransform,
        dirichlet_fraction=0.0,
    )
    visit_counts = policy_output.search_tree.summary().visit_counts
    return jnp.argmax(jnp.where(legal, visit_counts, -1), axis=-1).astype(jnp.int32)


_ILLEGAL_LOGIT = float(np.finfo(np.float32).min)


def _over(state: Any) -> Array:
    return jnp.asarray(state.terminated, bool) | jnp.asarray(state.truncated, bool)


def _uniform_logits(legal_action_mask: Array) -> Array:
    """Equal logits for the legal moves, the smallest finite logit for the others ``[B, A]``."""
    return jnp.where(legal_action_mask, 0.0, _ILLEGAL_LOGIT)


def _leaf_values_fn(game: Any, num_rollouts: int, max_steps: int):
    """``values(key, state) -> [B]``: the mean return of ``num_rollouts`` random rollouts from each
    position, for the player to move there; 0 for a finished game (its reward was paid on the edge
    into it)."""

    def rollout(key: Array, state: Any) -> Array:
        player = state.current_player

        def unfinished(carry):
            state, _, steps, _ = carry
            return ~_over(state) & (steps < max_steps)

        def play(carry):
            state, total, steps, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(action_key, logits).astype(jnp.int32)
            state = game.step(state, action, step_key)
            return state, total + state.rewards[player].astype(jnp.float32), steps + 1, key

        carry = (state, jnp.float32(0.0), jnp.int32(0), key)
        return jax.lax.while_loop(unfinished, play, carry)[1]

    def values(key: Array, state: Any) -> Array:
        batch_size = state.current_player.shape[0]
        keys = jax.random.split(key, (batch_size, num_rollouts))
        returns = jax.vmap(jax.vmap(rollout, in_axes=(0, None)))(keys, state)
        return jnp.mean(returns, axis=-1)

    return values
