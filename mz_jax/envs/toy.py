"""Small environments written for mz_jax, whose optimal policies are known by hand: ``"toy:<id>"``.

``toy:gamble`` is a two-step choice between a sure payoff and a coin whose side is seen before
the second move. It separates a model of chance from a deterministic one:

* step 1, from the start: action 0 is **safe** (go to state S), action 1 **gambles**: a fair coin
  moves the agent to H (heads) or T (tails), and the agent sees which; no reward;
* step 2: in S, either action pays ``safe_payoff`` (3/4 by default). In H, action 0 pays 1 and
  action 1 pays 0; in T, action 1 pays 1 and action 0 pays 0. The episode ends.

Playing safe returns ``safe_payoff``; gambling and then playing the side's move returns 1: gambling
is optimal, but only for a player that looks at the coin. A search on a deterministic model that
looks past the gamble cannot: the model predicts one state after (start, gamble) for both sides,
and fitted to a player that does not yet play the sides' moves it gives each second move a reward
of 1/2 (``max_a E[r | a] = 1/2`` where the truth is ``E[max_a r] = 1``), so the search plays safe. A
model with chance nodes (Stochastic MuZero) expands both sides and backs up ``1/2 · 1 + 1/2 · 1``.
A deterministic MuZero agent still gets there in the end, through its value function: once the
rare gambles it plays have taught it the sides' moves (learned at the real states H and T), the
value it predicts after gambling rises to 1 and the search follows.

Observations are one-hot over the five states (start, S, H, T, and the end); the legal-action mask
is all True; one player. The reward bound and the return bound are 1.

``toy:detour`` is a sparse-reward corridor whose goal lies behind a detour. Of ``length`` cells
``0 .. length - 1``, the agent starts in cell ``length - 3``; the door in the last cell opens only to
an agent holding the key, which lies in cell 0. Action 0 moves left and 1 right (a move into a wall
stays put); taking the key is stepping onto cell 0. Reaching the last cell with the key pays 1 and
ends the episode; every other move pays 0, so the greedy return is 1 or 0. The shortest solution
walks ``length - 3`` cells left and ``length - 1`` right: ``2 * length - 4`` moves, within the
time limit of ``4 * length``. Walking straight to the door, as a policy that does not explore does,
pays nothing, and a uniformly random walk of 10 cells solves about 2% of its episodes. Observations
are the one-hot cell followed by the key flag, ``[length + 1]``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from mz_jax.envs.base import Env, EnvState, TimeStep, as_action, restart
from mz_jax.types import Array

TOY_PREFIX = "toy:"

START, SAFE, HEADS, TAILS, END = range(5)
"""The states of ``toy:gamble``, also the positions of their one-hot observations (END: what the
last move reaches, seen only as a final observation)."""
SAFE_ACTION, GAMBLE_ACTION = 0, 1
"""The two first moves of ``toy:gamble``."""


def make_gamble(*, max_episode_steps: int | None = None, safe_payoff: float = 0.75) -> Env:
    """``toy:gamble`` (see the module docstring) with the sure payoff ``safe_payoff``.

    Args:
      max_episode_steps: None (an episode is two steps), or 1 to truncate after the first move.
      safe_payoff: what the safe branch pays, in [0, 1]; between 1/2 and 1 a deterministic model's
        search prefers it to the (optimal) gamble.

    Raises:
      ValueError: ``safe_payoff`` outside [0, 1] or not a number.
    """
    if isinstance(safe_payoff, bool) or not isinstance(safe_payoff, (int, float)):
        raise ValueError(f"safe_payoff must be a number in [0, 1], got {safe_payoff!r}.")
    if not 0.0 <= safe_payoff <= 1.0:
        raise ValueError(f"safe_payoff must be in [0, 1], got {safe_payoff}.")
    num_states = 5
    legal = jnp.ones(2, jnp.bool_)
    player = jnp.int32(0)
    limit = 2 if max_episode_steps is None else min(int(max_episode_steps), 2)

    payoffs = jnp.array(  # [state, action], in the order START, SAFE, HEADS, TAILS, END
        [[0.0, 0.0], [safe_payoff, safe_payoff], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], jnp.float32
    )

    def observe(state: Array) -> Array:
        return jax.nn.one_hot(state, num_states, dtype=jnp.float32)

    def reset(key: Array) -> tuple[EnvState, TimeStep]:
        del key
        return EnvState(jnp.int32(START), jnp.int32(0)), restart(observe(START), legal, player)

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        action = as_action(action)
        here = state.backend
        coin = jnp.where(jax.random.bernoulli(key), HEADS, TAILS)
        after_first = jnp.where(action == GAMBLE_ACTION, coin, SAFE)
        reward = payoffs[here, action]
        terminated = here != START
        episode_step = state.episode_step + 1
        truncated = ~terminated & (episode_step >= limit)
        done = terminated | truncated
        reached = jnp.where(terminated, END, after_first)
        next_state = jnp.where(done, START, after_first).astype(jnp.int32)
        timestep = TimeStep(
            observation=observe(next_state),
            legal_action_mask=legal,
            player=player,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            final_observation=observe(reached),
            final_player=player,
        )
        return EnvState(next_state, jnp.where(done, 0, episode_step).astype(jnp.int32)), timestep

    return Env(
        name=TOY_PREFIX + "gamble",
        num_actions=2,
        observation_shape=(num_states,),
        num_players=1,
        max_episode_steps=limit,
        reward_bound=1.0,
        return_bound=1.0,
        reset=reset,
        step=step,
    )


def make_detour(
    *, max_episode_steps: int | None = None, length: int = 10, state_bounds: bool = True
) -> Env:
    """``toy:detour`` (see the module docstring), a corridor of ``length`` cells.

    Args:
      max_episode_steps: the time limit in moves; None: ``4 * length``.
      length: cells of the corridor, an integer >= 4 (default 10).
      state_bounds: False leaves ``reward_bound`` and ``return_bound`` None, as for an
        environment that states nothing about its rewards (the supports are then MuZero's wide
        ones); True states 1 for both.

    Raises:
      ValueError: ``length`` not an integer >= 4, or ``state_bounds`` not a bool.
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 4:
        raise ValueError(f"length must be an integer >= 4, got {length!r}.")
    if not isinstance(state_bounds, bool):
        raise ValueError(f"state_bounds must be True or False, got {state_bounds!r}.")
    limit = 4 * length if max_episode_steps is None else int(max_episode_steps)
    start, door = length - 3, length - 1
    legal = jnp.ones(2, jnp.bool_)
    player = jnp.int32(0)

    def observe(cell: Array, key_held: Array) -> Array:
        return jnp.concatenate(
            [jax.nn.one_hot(cell, length, dtype=jnp.float32), key_held.astype(jnp.float32)[None]]
        )

    def unpack(backend: Array) -> tuple[Array, Array]:
        """The backend state is the cell plus ``length`` when the key is held."""
        return backend % length, backend >= length

    def reset(key: Array) -> tuple[EnvState, TimeStep]:
        del key
        state = EnvState(jnp.int32(start), jnp.int32(0))
        return state, restart(observe(jnp.int32(start), jnp.bool_(False)), legal, player)

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        del key
        action = as_action(action)
        cell, key_held = unpack(state.backend)
        cell = jnp.clip(cell + 2 * action - 1, 0, door)
        key_held = key_held | (cell == 0)
        terminated = key_held & (cell == door)
        episode_step = state.episode_step + 1
        truncated = ~terminated & (episode_step >= limit)
        done = terminated | truncated
        after = jnp.where(done, start, cell + length * key_held).astype(jnp.int32)
        timestep = TimeStep(
            observation=observe(*unpack(after)),
            legal_action_mask=legal,
            player=player,
            reward=terminated.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_observation=observe(cell, key_held),
            final_player=player,
        )
        return EnvState(after, jnp.where(done, 0, episode_step).astype(jnp.int32)), timestep

    bound = 1.0 if state_bounds else None
    return Env(
        name=TOY_PREFIX + "detour",
        num_actions=2,
        observation_shape=(length + 1,),
        num_players=1,
        max_episode_steps=limit,
        reward_bound=bound,
        return_bound=bound,
        reset=reset,
        step=step,
    )


TOY_ENVS: dict[str, Any] = {"gamble": make_gamble, "detour": make_detour}
"""The ``toy:`` environments by id: factories taking ``max_episode_steps`` and their own keywords."""
