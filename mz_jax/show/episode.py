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

import functools
from collections.abc import Callable
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


class _Position(NamedTuple):
    """Where an episode stands, as both kinds of environment report it.

    ``state`` is what the next step takes (a pgx ``State``, or the :class:`EnvState`); ``backend``
    the environment's own state to draw (None once a non-pgx episode has ended: it has reset).
    ``reward`` and ``done`` are those of the transition that led here."""

    state: Any
    backend: Any
    observation: np.ndarray
    legal_action_mask: np.ndarray
    player: int
    reward: float
    done: bool


class _Stepper(NamedTuple):
    """``start(key) -> _Position`` and ``advance(position, action, key) -> _Position``, jitted."""

    start: Callable[[jax.Array], _Position]
    advance: Callable[[_Position, int, jax.Array], _Position]


@functools.cache
def jitted_pgx_game(env_name: str) -> tuple[Callable, Callable]:
    """pgx's ``init(key)`` and ``step(state, action, key)`` of the game ``env_name``
    (``"pgx:<id>"``), jitted once a game; they do not reset at the end of a game."""
    game = pgx_game(env_name)
    return jax.jit(game.init), jax.jit(game.step)


def _stepper(env: Any) -> _Stepper:
    """How to play ``env`` position by position: a pgx game on the game itself, without the
    automatic reset (so the final board stays to be drawn); any other environment by its own
    ``reset`` and ``step``, the final observation kept where the episode ends."""
    if env.name.startswith(PGX_PREFIX):
        init, step = jitted_pgx_game(env.name)

        def view(backend: Any, reward: float = 0.0) -> _Position:
            return _Position(
                state=backend,
                backend=backend,
                observation=np.asarray(backend.observation, np.float32),
                legal_action_mask=np.asarray(backend.legal_action_mask, bool),
                player=int(backend.current_player),
                reward=reward,
                done=bool(backend.terminated | backend.truncated),
            )

        def advance(position: _Position, action: int, key: jax.Array) -> _Position:
            mover = int(position.state.current_player)
            reached = step(position.state, jnp.int32(action), key)
            return view(reached, float(reached.rewards[mover]))

        return _Stepper(start=lambda key: view(init(key)), advance=advance)

    reset, step = jax.jit(env.reset), jax.jit(env.step)

    def start(key: jax.Array) -> _Position:
        state, timestep = reset(key)
        return _Position(
            state=state,
            backend=state.backend,
            observation=np.asarray(timestep.observation, np.float32),
            legal_action_mask=np.asarray(timestep.legal_action_mask, bool),
            player=int(timestep.player),
            reward=0.0,
            done=False,
        )

    def advance(position: _Position, action: int, key: jax.Array) -> _Position:
        state, timestep = step(key, position.state, jnp.int32(action))
        done = bool(timestep.terminated | timestep.truncated)
        return _Position(
            state=state,
            backend=None if done else state.backend,  # reset already: no state of the end
            observation=np.asarray(
                timestep.final_observation if done else timestep.observation, np.float32
            ),
            legal_action_mask=np.asarray(timestep.legal_action_mask, bool),
            player=int(timestep.final_player if done else timestep.player),
            reward=float(timestep.reward),
            done=done,
        )

    return _Stepper(start=start, advance=advance)


def record_episode(agent: Any, key: jax.Array, *, max_steps: int) -> list[Step]:
    """Plays one greedy episode of ``agent`` (an :class:`~mz_jax.run.agent.Agent`) and returns
    its positions: at most ``max_steps`` decisions, then the position reached.

    Raises:
      ValueError: if ``max_steps`` is not an integer >= 1.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps {max_steps!r} is invalid: allowed an integer >= 1")
    env = agent.env
    stepper = _stepper(env)
    reset_key, key = jax.random.split(key)
    position = stepper.start(reset_key)
    steps: list[Step] = []
    for index in range(max_steps):
        search_key, step_key, key = jax.random.split(key, 3)
        output, tree = agent.search_with_tree(
            search_key, position.observation[None], position.legal_action_mask[None]
        )
        action = int(output.action[0])
        reached = stepper.advance(position, action, step_key)
        steps.append(
            Step(
                index=index,
                observation=position.observation,
                backend=position.backend,
                player=position.player,
                legal_action_mask=position.legal_action_mask,
                action=action,
                reward=reached.reward,
                root_value=float(output.root_value[0]),
                visit_counts=np.asarray(tree.children_visits[0, 0, : env.num_actions], np.int64),
                done=False,
            )
        )
        position = reached
        if position.done:
            break
    steps.append(
        Step(
            index=len(steps),
            observation=position.observation,
            backend=position.backend,
            player=position.player,
            legal_action_mask=position.legal_action_mask,
            action=None,
            reward=0.0,
            root_value=None,
            visit_counts=None,
            done=position.done,
        )
    )
    return steps


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
    stepper = _stepper(env)
    reset_key, key = jax.random.split(key)
    position = stepper.start(reset_key)
    for number, move in enumerate(moves, start=1):
        where = f"move {number} of {moves}"
        if not 0 <= move < env.num_actions:
            raise ValueError(
                f"{where}, {move}, is not an action of {env.name}: allowed 0 to "
                f"{env.num_actions - 1}"
            )
        if not position.legal_action_mask[move]:
            legal = np.flatnonzero(position.legal_action_mask).tolist()
            raise ValueError(f"{where}, {move}, is illegal there: legal {legal}")
        step_key, key = jax.random.split(key)
        position = stepper.advance(position, move, step_key)
        if position.done:
            raise ValueError(f"{where}, {move}, ends the episode: there is no position to search")
    return position.observation, position.legal_action_mask, position.backend
