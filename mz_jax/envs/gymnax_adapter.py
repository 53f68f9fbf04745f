"""gymnax environments as :class:`~mz_jax.envs.base.Env`: the names ``"gymnax:<id>"``.

Every discrete-action gymnax (>= 1.0) environment. The time limit is
``params.max_steps_in_episode`` (``max_episode_steps`` overrides it), reported by gymnax as
``truncated`` apart from ``terminated``; gymnax's own step resets at the end of an episode. The
legal-action mask is all True and the player always 0. Observations are float32; a Discrete
observation space (FrozenLake-misc's tile index) is observed one-hot. gymnax is imported when first
used.

``Env.reward_bound`` comes from :data:`REWARD_BOUNDS`, read off the gymnax 1.0 sources (each
environment's ``step_env`` with its default ``EnvParams``); a few are computed from the environment
built (:func:`gymnax_reward_bound`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from mz_jax.envs.base import Env, EnvState, Reflection, TimeStep, as_action, restart
from mz_jax.types import Array

GYMNAX_PREFIX = "gymnax:"

# Constructing these downloads data sets; they are not listed, but make_env still accepts them.
_DOWNLOADS_ON_CONSTRUCTION = frozenset({"MNISTBandit-bsuite"})


REWARD_BOUNDS: dict[str, float | None] = {
    # classic control
    "CartPole-v1": 1.0,  # 1 - prev_terminal, in {0, 1}
    "Acrobot-v1": 1.0,  # -1 until the goal, then 0
    "MountainCar-v0": 1.0,  # -1 every step
    # continuous (refused by this adapter); for completeness: -(theta^2 + 0.1 thdot^2 + 0.001 u^2),
    # |theta| <= pi, |thdot| <= max_speed = 8, |u| <= max_torque = 2
    "Pendulum-v1": math.pi**2 + 0.1 * 8.0**2 + 0.001 * 2.0**2,  # 16.2736...
    "MountainCarContinuous-v0": None,  # -0.1 * action^2 with the action unclipped
    # MinAtar
    "Asterix-MinAtar": 1.0,  # +1 per treasure; one entity per row, so at most one caught a step
    "Breakout-MinAtar": 1.0,  # +1 for the one brick the ball may strike in a step
    "Freeway-MinAtar": 1.0,  # +1 on reaching the top
    # +1 per alien hit; shots are >= shot_cool_down = 5 rows apart and the aliens span 4 rows, so
    # one hit a step, except in the (terminal) step whose border move wraps row 9 to row 0: two
    "SpaceInvaders-MinAtar": 2.0,
    # +1 per enemy (fish or sub) shot down, at most 2 a step (2 friendly bullets alive at most:
    # cool-down 5, 10 cells to fly), plus, on surfacing with 6 divers, oxygen * 10 // 200 <= 10
    "Seaquest-MinAtar": 12.0,
    # bsuite
    "Catch-bsuite": 1.0,  # +-1 when the ball reaches the paddle's row
    "DeepSea-bsuite": 1.0,  # deterministic (default): 1 at the treasure, -0.01/size a right move
    "MemoryChain-bsuite": 1.0,  # +-1 at the query
    "UmbrellaChain-bsuite": 1.0,  # +-1 at the end, +-1 distractor rewards before
    "DiscountingChain-bsuite": 1.1,  # 1, or optimal_return = 1.1 for the best context
    "MNISTBandit-bsuite": 1.0,  # +-1
    "SimpleBandit-bsuite": 1.0,  # arm rewards linspace(0, 1)
    # misc
    "FourRooms-misc": 1.0,  # 1 at the goal
    "MetaMaze-misc": 10.0,  # reward = 10 at the goal (punishment 0 for a wall)
    "BernoulliBandit-misc": 1.0,  # Bernoulli draws, {0, 1}
    "GaussianBandit-misc": None,  # Gaussian arm: unbounded
    "Pong-misc": 1.0,  # 1 - done, in {0, 1}
    "FrozenLake-misc": 1.0,  # reward_schedule (1, 0, 0); computed from the built env below
    "PointRobot-misc": None,  # continuous (refused); dense reward: minus a distance
    "Reacher-misc": None,  # continuous (refused)
    "Swimmer-misc": None,  # continuous (refused)
}
"""The largest |reward| of one transition of each gymnax id with its default ``EnvParams`` and
constructor arguments (None: unbounded or not worked out). :func:`gymnax_reward_bound` adjusts the
few that depend on them."""


def gymnax_reward_bound(env_id: str, env: Any, params: Any) -> float | None:
    """The largest |reward| of one transition of the gymnax ``env`` with ``params``, or None.

    :data:`REWARD_BOUNDS`, except where constructor arguments or ``params`` set the rewards.
    """
    if env_id == "FrozenLake-misc":  # (goal, hole, frozen) rewards, a constructor argument
        return float(max(abs(float(r)) for r in env.reward_schedule))
    if env_id == "DeepSea-bsuite":  # not deterministic: N(0, 1) noise at the chain's end
        return 1.0 if bool(params.deterministic) else None
    if env_id == "MetaMaze-misc":
        return abs(float(params.reward)) + abs(float(params.punishment))
    if env_id == "DiscountingChain-bsuite":
        return max(1.0, abs(float(params.optimal_return)))
    return REWARD_BOUNDS.get(env_id)


def _acrobot_mirror(observation: Array) -> Array:
    # (cos a1, sin a1, cos a2, sin a2, da1, da2): both angles and velocities change sign.
    return observation * jnp.array([1.0, -1.0, 1.0, -1.0, -1.0, -1.0], observation.dtype)


REFLECTIONS: dict[str, Reflection] = {
    # (x, dx, theta, dtheta) all change sign; push left (0) <-> push right (1).
    "CartPole-v1": Reflection(observation=jnp.negative, actions=(1, 0)),
    # Torques (-1, 0, +1) (the default EnvParams.available_torque); the start state is uniform in
    # [-0.1, 0.1] in each coordinate.
    "Acrobot-v1": Reflection(observation=_acrobot_mirror, actions=(2, 1, 0)),
    # A (rows, columns) grid mirrored left to right; moves (left, stay, right); the ball starts in a
    # uniform column and the paddle in the middle one (columns // 2 of an odd number of columns).
    "Catch-bsuite": Reflection(observation=lambda grid: grid[:, ::-1], actions=(2, 1, 0)),
}
"""Mirror symmetries (:class:`~mz_jax.envs.base.Reflection`) of gymnax ids with their default
``EnvParams``, read off the gymnax 1.0 sources; MountainCar has none (its goal is on one side of
the valley), nor do the MinAtar games (their objects do not start in mirrored places)."""


def gymnax_reflection(env_id: str, env: Any, params: Any) -> Reflection | None:
    """:data:`REFLECTIONS`' entry for ``env_id`` where ``env`` and ``params`` keep it a symmetry."""
    if env_id == "Catch-bsuite" and env.columns % 2 == 0:  # the paddle starts right of the middle
        return None
    if env_id == "Acrobot-v1" and not bool(
        jnp.all(params.available_torque == -params.available_torque[::-1])
    ):
        return None
    return REFLECTIONS.get(env_id)


def gymnax_ids() -> tuple[str, ...]:
    """Every id gymnax registers, buildable here or not."""
    import gymnax

    return tuple(gymnax.registered_envs)


@functools.cache
def gymnax_catalog() -> dict[str, bool]:
    """Whether each gymnax id constructs here with a discrete action space."""
    catalog = {}
    for env_id in gymnax_ids():
        if env_id in _DOWNLOADS_ON_CONSTRUCTION:
            catalog[env_id] = False
            continue
        try:
            _build_gymnax(env_id, None, {})
            catalog[env_id] = True
        except Exception:  # one that cannot be built here (or is continuous) is not listed
            catalog[env_id] = False
    return catalog


def _build_gymnax(env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]):
    import gymnax
    from gymnax.environments import spaces

    name = GYMNAX_PREFIX + env_id
    try:
        env, params = gymnax.make(env_id, **kwargs)
    except TypeError as error:
        raise ValueError(f"Bad keyword arguments {sorted(kwargs)} for {name!r}: {error}") from error
    except Exception as error:
        raise ValueError(f"Could not construct {name!r} here: {error!r}") from error
    action_space = env.action_space(params)
    if isinstance(action_space, spaces.Box):
        raise ValueError(
            f"{name!r} is continuous (action space {action_space!r}); MuZero here needs a discrete "
            "action space."
        )
    if not isinstance(action_space, spaces.Discrete):
        raise ValueError(
            f"{name!r} has a {type(action_space).__name__} action space; MuZero here needs a "
            "Discrete one."
        )
    if not hasattr(params, "max_steps_in_episode"):
        raise ValueError(f"{name!r} has no params.max_steps_in_episode; gymnax >= 1.0 is needed.")
    if max_episode_steps is not None:
        params = params.replace(max_steps_in_episode=max_episode_steps)
    return env, params, int(action_space.n)


def make_gymnax(env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]) -> Env:
    """The gymnax environment ``env_id``, built with ``kwargs``.

    Raises:
      ValueError: for bad keyword arguments, one that cannot be built here, or a non-discrete
        action space.
    """
    from gymnax.environments import spaces

    env, params, num_actions = _build_gymnax(env_id, max_episode_steps, kwargs)
    legal_action_mask = jnp.ones(num_actions, jnp.bool_)
    player = jnp.int32(0)
    observation_space = env.observation_space(params)
    if isinstance(observation_space, spaces.Discrete):
        # An index into n states (FrozenLake's tile) is a category, not a quantity: one-hot it, as
        # Stable-Baselines3 does for Discrete observation spaces.
        def as_observation(observation: Array) -> Array:
            return jax.nn.one_hot(observation, int(observation_space.n), dtype=jnp.float32)

    else:

        def as_observation(observation: Array) -> Array:
            return jnp.asarray(observation, jnp.float32)

    def reset(key: Array) -> tuple[EnvState, TimeStep]:
        observation, backend = env.reset(key, params)
        observation = as_observation(observation)
        return EnvState(backend, jnp.int32(0)), restart(observation, legal_action_mask, player)

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        # gymnax's own step resets with (a split of) key when the episode ends and hands back the
        # pre-reset observation; it keeps env-specific reset rules (DeepSea's running metrics).
        observation, backend, reward, terminated, truncated, info = env.step(
            key, state.backend, as_action(action), params
        )
        terminated = jnp.asarray(terminated, jnp.bool_)
        truncated = jnp.asarray(truncated, jnp.bool_) & ~terminated
        done = terminated | truncated
        timestep = TimeStep(
            observation=as_observation(observation),
            legal_action_mask=legal_action_mask,
            player=player,
            reward=jnp.asarray(reward, jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_observation=as_observation(info["final_observation"]),
            final_player=player,
        )
        episode_step = jnp.where(done, 0, state.episode_step + 1).astype(jnp.int32)
        return EnvState(backend, episode_step), timestep

    observation = jax.eval_shape(reset, jax.random.key(0))[1].observation
    return Env(
        name=GYMNAX_PREFIX + env_id,
        num_actions=num_actions,
        observation_shape=tuple(observation.shape),
        num_players=1,
        max_episode_steps=int(params.max_steps_in_episode),
        reward_bound=gymnax_reward_bound(env_id, env, params),
        # bsuite's Catch pays +1 or -1 once, when the ball lands.
        return_bound=1.0 if env_id == "Catch-bsuite" else None,
        reflection=gymnax_reflection(env_id, env, params),
        reset=reset,
        step=step,
    )
