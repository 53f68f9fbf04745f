"""Train MuZero on an environment of your own: a 1-D corridor written in plain JAX.

The agent starts in the leftmost cell of a corridor and is paid +1 for reaching the rightmost
cell; an episode that has not reached it after ``max_episode_steps`` moves is truncated. Two actions,
left (0) and right (1); left is illegal in the leftmost cell. Registering the environment under
``"custom:corridor"`` makes every part of mz_jax (``make_env``, ``TrainConfig``, ``run_training``)
take it by name.

    python examples/custom_environment.py            # trains for 4,096 environment steps
    python examples/custom_environment.py --quick    # 1,024 steps (what CI runs)
    mz-jax train --config examples/custom_environment.py --workdir runs/corridor
"""

from __future__ import annotations

import argparse
import tempfile

import jax
import jax.numpy as jnp

from mz_jax import TrainConfig
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig
from mz_jax.envs import Env, EnvState, TimeStep, make_env, register_env
from mz_jax.run.loop import run_training
from mz_jax.run.records import read_metrics

LEFT, RIGHT = 0, 1


def make_corridor(*, length: int = 8, max_episode_steps: int | None = None) -> Env:
    """A corridor of ``length`` cells; observations are the one-hot cell ``[length]``.

    Args:
      length: number of cells; the agent starts in cell 0, the goal is cell ``length - 1``.
      max_episode_steps: the time limit in moves (None: ``2 * length``). ``make_env`` passes its own
        ``max_episode_steps`` here, so ``TrainConfig.max_episode_steps`` reaches the factory.
    """
    limit = 2 * length if max_episode_steps is None else max_episode_steps
    goal = length - 1

    def observe(cell):
        return jax.nn.one_hot(cell, length, dtype=jnp.float32)

    def legal_actions(cell):
        return jnp.array([True, True]).at[LEFT].set(cell > 0)

    def first_timestep(cell):
        return TimeStep(
            observation=observe(cell),
            legal_action_mask=legal_actions(cell),
            player=jnp.int32(0),
            reward=jnp.float32(0.0),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            final_observation=observe(cell),
            final_player=jnp.int32(0),
        )

    def reset(key):
        del key  # Every episode starts in cell 0; a random start would draw from key.
        cell = jnp.int32(0)
        return EnvState(backend=cell, episode_step=jnp.int32(0)), first_timestep(cell)

    def step(key, state, action):
        # An illegal "left" in cell 0 keeps the agent in place; search never chooses it.
        reached = jnp.clip(state.backend + jnp.where(action == RIGHT, 1, -1), 0, goal)
        episode_step = state.episode_step + 1
        terminated = reached == goal
        truncated = (episode_step >= limit) & ~terminated
        done = terminated | truncated
        # Automatic reset: after the last move of an episode, the state and observation returned
        # already belong to a new episode; what the move reached stays in final_observation.
        restart_state, _ = reset(key)
        cell = jnp.where(done, restart_state.backend, reached)
        timestep = TimeStep(
            observation=observe(cell),
            legal_action_mask=legal_actions(cell),
            player=jnp.int32(0),
            reward=terminated.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_observation=observe(reached),
            final_player=jnp.int32(0),
        )
        next_state = EnvState(backend=cell, episode_step=jnp.where(done, 0, episode_step))
        return next_state, timestep

    return Env(
        name="custom:corridor",
        num_actions=2,
        observation_shape=(length,),
        num_players=1,
        max_episode_steps=limit,
        reset=reset,
        step=step,
    )


register_env("custom:corridor", make_corridor)


def corridor_config(*, quick: bool) -> TrainConfig:
    """A small run: 16 environments, a 16-simulation MuZero search and a 32-wide MLP."""
    return TrainConfig(
        env="custom:corridor",
        total_env_steps=1_024 if quick else 4_096,
        num_envs=16,
        rollout_length=4,
        updates_per_iteration=2,
        batch_size=32,
        num_unroll_steps=3,
        td_steps=5,
        discount=0.97,
        # Large enough to keep every step of the run: the early, exploratory episodes are the only
        # ones that show what moving left does.
        replay_capacity=8_192,
        warmup_updates=10,
        search=SearchConfig(policy="muzero", num_simulations=16),
        network=NetworkConfig(
            hidden_sizes=(32,), latent_size=16, value_support_size=3, reward_support_size=1
        ),
        # Quick: the first evaluation (after two iterations, 128 steps) comes before any update:
        # the replay needs num_unroll_steps + td_steps + 1 = 9 steps per environment to sample.
        eval_every_env_steps=128 if quick else 512,
        eval_episodes=16,
        eval_max_steps=16,
        log_every_seconds=60.0,
        checkpoint_every_seconds=3_600.0,
    )


def config() -> TrainConfig:
    """The full run, as a preset of the ``mz-jax`` command (``--config`` runs this file, which
    registers the environment on the way)."""
    return corridor_config(quick=False)


def play_always_right(env: Env) -> None:
    """Prints what the environment reports when the agent always moves right."""
    state, timestep = env.reset(jax.random.key(0))
    print(
        f"reset: cell {int(jnp.argmax(timestep.observation))}, legal {timestep.legal_action_mask}"
    )
    step = jax.jit(env.step)
    for move in range(1, env.observation_shape[0]):
        state, timestep = step(jax.random.key(move), state, jnp.int32(RIGHT))
    print(
        f"after {move} moves right: reward {float(timestep.reward)}, terminated "
        f"{bool(timestep.terminated)}, truncated {bool(timestep.truncated)}, final cell "
        f"{int(jnp.argmax(timestep.final_observation))}, next episode's cell "
        f"{int(jnp.argmax(timestep.observation))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,024 steps, for CI")
    parser.add_argument("--workdir", default=None, help="default: a new temporary directory")
    args = parser.parse_args()
    train_config = corridor_config(quick=args.quick)

    env = make_env("custom:corridor")
    print(
        f"{env.name}: {env.num_actions} actions, observation {env.observation_shape}, "
        f"time limit {env.max_episode_steps}"
    )
    play_always_right(env)

    workdir = args.workdir or tempfile.mkdtemp(prefix="mz_jax_corridor_")
    summary = run_training(train_config, workdir)
    # Untrained, every action ties and greedy search takes the lowest legal one, left: the agent
    # shuttles between cells 0 and 1 and scores 0.
    print("greedy evaluation (mean return of 16 episodes; 1.0 = always reaches the goal):")
    for record in read_metrics(workdir):
        if "eval/episode_return" in record:
            print(
                f"  env steps {record['env_steps']:>6,} ({record['step']:>3} updates): "
                f"eval return {record['eval/episode_return']:.3f}"
            )
    print(
        f"trained {summary['env_steps']:,} env steps, {summary['updates']} updates in "
        f"{summary['wall_s']:.1f}s; workdir {workdir}"
    )


if __name__ == "__main__":
    main()
