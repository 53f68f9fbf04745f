"""One greedy episode of a trained agent, step by step, with what its search saw at each step.

::

    agent = Agent.restore("runs/cartpole")
    steps = record_episode(agent, jax.random.key(0), max_steps=500)
    steps[3].action, steps[3].root_value, steps[3].visit_counts

The agent plays as :meth:`~mz_jax.run.agent.Agent.act` does (greedy search, no noise); in a
two-player game it plays both seats. Each :class:`Step` is one position: the observation and
environment state there, and the search's action, root value and root visit counts; the last
step is the position where the episode ended, with no action. pgx games are stepped on the pgx
game itself (no automatic reset), so the last step holds the final board for drawing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.envs.pgx_adapter import PGX_PREFIX, pgx_game


class Step(NamedTuple):
    """One position of a recorded episode.

    Attributes:
      index: the position's place in the episode (0 the first).
      observation: ``[*observation_shape]`` float32, what the agent saw.
      backend: the environment's own state at the position (a pgx ``State`` for pgx games, which
        draws itself; the gymnax state otherwise), unbatched; None at the last position of a
        non-pgx episode (the environment has already reset there; ``observation`` is the final one).
      player: the player to move (0 in single-player environments).
      legal_action_mask: ``[A]`` bool.
      action: the action the agent chose, or None at the last position.
      reward: the reward of that action's transition (from the mover's perspective), 0 at the last.
      root_value: the search's value of the position for the player to move (None at the last).
      visit_counts: ``[A]`` int, the root's visit count of each action (None at the last).
      done: whether the episode ended at this position (only the last one).
    """

    index: int
    observation: np.ndarray
    backend: Any
    player: int
    legal_action_mask: np.ndarray
    action: int | None
    reward: float
    root_value: float | None
    visit_counts: np.ndarray | None
    done: bool


def record_episode(agent: Any, key: jax.Array, *, max_steps: int) -> list[Step]:
    """Plays one greedy episode of ``agent`` (an :class:`~mz_jax.run.agent.Agent`) and returns
    its positions: at most ``max_steps`` decisions, then the position reached.

    Raises:
      ValueError: if ``max_steps`` is not an integer >= 1.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps {max_steps!r} is invalid: allowed an integer >= 1")
    env = agent.env
    pgx = env.name.startswith(PGX_PREFIX)
    if pgx:
        game = pgx_game(env.name)
        reset, step = jax.jit(game.init), jax.jit(lambda s, a, k: game.step(s, a, k))
    else:
        reset, step = jax.jit(env.reset), jax.jit(env.step)
    reset_key, key = jax.random.split(key)
    if pgx:
        backend = reset(reset_key)
        observation, legal, player = _pgx_view(backend)
    else:
        state, timestep = reset(reset_key)
        backend = state.backend
        observation = np.asarray(timestep.observation, np.float32)
        legal = np.asarray(timestep.legal_action_mask, bool)
        player = int(timestep.player)
    steps: list[Step] = []
    for index in range(max_steps):
        search_key, step_key, key = jax.random.split(key, 3)
        output, tree = agent.search_with_tree(search_key, observation[None], legal[None])
        action = int(output.action[0])
        visits = np.asarray(tree.children_visits[0, 0, : env.num_actions], np.int64)
        if pgx:
            mover = int(backend.current_player)
            backend_next = step(backend, jnp.int32(action), step_key)
            reward = float(backend_next.rewards[mover])
            done = bool(backend_next.terminated | backend_next.truncated)
        else:
            state, timestep = step(step_key, state, jnp.int32(action))
            reward = float(timestep.reward)
            done = bool(timestep.terminated | timestep.truncated)
        steps.append(
            Step(
                index=index,
                observation=observation,
                backend=backend,
                player=player,
                legal_action_mask=legal,
                action=action,
                reward=reward,
                root_value=float(output.root_value[0]),
                visit_counts=visits,
                done=False,
            )
        )
        if pgx:
            backend = backend_next
            observation, legal, player = _pgx_view(backend)
        elif done:
            backend = None  # the environment has reset; its final observation is kept
            observation = np.asarray(timestep.final_observation, np.float32)
            legal = np.asarray(timestep.legal_action_mask, bool)
            player = int(timestep.final_player)
        else:
            backend = state.backend
            observation = np.asarray(timestep.observation, np.float32)
            legal = np.asarray(timestep.legal_action_mask, bool)
            player = int(timestep.player)
        if done:
            break
    steps.append(
        Step(
            index=len(steps),
            observation=observation,
            backend=backend,
            player=player,
            legal_action_mask=legal,
            action=None,
            reward=0.0,
            root_value=None,
            visit_counts=None,
            done=done,
        )
    )
    return steps


def _pgx_view(backend: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """``(observation, legal_action_mask, player)`` of a pgx state, as the adapter reports them."""
    return (
        np.asarray(backend.observation, np.float32),
        np.asarray(backend.legal_action_mask, bool),
        int(backend.current_player),
    )


def position_after(
    env: Any, key: jax.Array, moves: list[int]
) -> tuple[np.ndarray, np.ndarray, Any]:
    """``(observation, legal_action_mask, backend)`` of the position that ``moves`` (actions,
    in order) reach from the start of an episode drawn with ``key``: the position ``mz-jax tree``
    searches from.

    Raises:
      ValueError: for a move that is not an action, is illegal where it is played, or comes after
        the episode has ended.
    """
    pgx = env.name.startswith(PGX_PREFIX)
    reset_key, key = jax.random.split(key)
    if pgx:
        game = pgx_game(env.name)
        backend = game.init(reset_key)
        observation, legal, _ = _pgx_view(backend)
    else:
        state, timestep = env.reset(reset_key)
        backend = state.backend
        observation = np.asarray(timestep.observation, np.float32)
        legal = np.asarray(timestep.legal_action_mask, bool)
    for number, move in enumerate(moves, start=1):
        where = f"move {number} of {moves}"
        if not 0 <= move < env.num_actions:
            raise ValueError(
                f"{where}, {move}, is not an action of {env.name}: allowed 0 to "
                f"{env.num_actions - 1}"
            )
        if not legal[move]:
            raise ValueError(
                f"{where}, {move}, is illegal there: legal {np.flatnonzero(legal).tolist()}"
            )
        step_key, key = jax.random.split(key)
        if pgx:
            backend = game.step(backend, jnp.int32(move), step_key)
            observation, legal, _ = _pgx_view(backend)
            done = bool(backend.terminated | backend.truncated)
        else:
            state, timestep = env.step(step_key, state, jnp.int32(move))
            backend = state.backend
            observation = np.asarray(timestep.observation, np.float32)
            legal = np.asarray(timestep.legal_action_mask, bool)
            done = bool(timestep.terminated | timestep.truncated)
        if done:
            raise ValueError(f"{where}, {move}, ends the episode: there is no position to search")
    return observation, legal, backend
