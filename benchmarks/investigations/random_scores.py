"""The uniformly random policy's mean return on every environment of ``mz_jax/suite/reference_scores.json``.

These are the ``random`` ends of the normalisation ``(score - random) / (reference - random)`` that
``mz_jax.suite.report`` applies to a suite's final returns. Each environment is made with
``mz_jax.make_env(name)`` (its own time limit), and ``--episodes`` episodes are played to their end
as one compiled ``lax.while_loop`` over a ``vmap`` of environments, picking uniformly among the legal
actions at every step.

Two-player games follow the protocol of ``mz_jax.training.evaluate.evaluate(..., opponent="random")``: the
scored player (the "agent", here random too) moves first in the first half of the games and second
in the other half, and its return is the game result from its side (+1 win, 0 draw, -1 loss). Both
seats are played by the same policy, so the expected mean over both halves is exactly 0; the table
shows the measured value and the first-seat mean for reference.

    python benchmarks/investigations/random_scores.py                    # every environment of the data file
    python benchmarks/investigations/random_scores.py --episodes 100 --envs gymnax:CartPole-v1
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.envs import Env, make_env
from mz_jax.suite.aggregate import reference_scores

# A cap for environments without a time limit (pgx board games end well before it).
DEFAULT_MAX_STEPS = 10_000


def random_returns(
    env: Env, key: jax.Array, *, num_episodes: int, max_steps: int
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Plays one episode in each of ``num_episodes`` environments with the uniformly random policy.

    Args:
      env: the environment.
      key: a PRNG key.
      num_episodes: N, episodes played side by side.
      max_steps: steps after which an unfinished episode is cut (and counted as not completed).

    Returns:
      ``(episode_return [N], completed [N], agent_moves_first [N], episode_length [N])``: the
      return of the scored player (player 0 in single-player environments), whether the episode
      ended within ``max_steps``, whether the scored player moved first (all True in
      single-player ones), and the steps the episode took (``max_steps`` where it was cut).
    """
    reset_key, loop_key = jax.random.split(key)
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(reset_key, num_episodes))
    if env.num_players == 2:
        moves_first = jnp.arange(num_episodes) < (num_episodes + 1) // 2
        agent_id = jnp.where(moves_first, timestep.player, 1 - timestep.player)
    else:
        moves_first = jnp.ones(num_episodes, bool)
        agent_id = timestep.player

    def not_finished(carry):
        step, *_, done = carry
        return (step < max_steps) & ~jnp.all(done)

    def play(carry):
        step, key, env_state, timestep, episode_return, episode_length, done = carry
        key, action_key, env_key = jax.random.split(key, 3)
        uniform_over_legal = jnp.where(timestep.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(action_key, uniform_over_legal).astype(jnp.int32)
        env_state, next_timestep = jax.vmap(env.step)(
            jax.random.split(env_key, num_episodes), env_state, action
        )
        # The reward is the mover's own; seen from the agent's side it changes sign on the
        # opponent's moves.
        sign = jnp.where(timestep.player == agent_id, 1.0, -1.0)
        episode_return = episode_return + jnp.where(done, 0.0, sign * next_timestep.reward)
        episode_length = episode_length + ~done
        done = done | next_timestep.terminated | next_timestep.truncated
        return step + 1, key, env_state, next_timestep, episode_return, episode_length, done

    init = (
        jnp.int32(0),
        loop_key,
        env_state,
        timestep,
        jnp.zeros(num_episodes, jnp.float32),
        jnp.zeros(num_episodes, jnp.int32),
        jnp.zeros(num_episodes, bool),
    )
    *_, episode_return, episode_length, done = jax.lax.while_loop(not_finished, play, init)
    return episode_return, done, moves_first, episode_length


def measure(name: str, *, num_episodes: int, seed: int) -> dict:
    """The random policy's returns on environment ``name``, summarised for the table."""
    env = make_env(name)
    max_steps = env.max_episode_steps or DEFAULT_MAX_STEPS
    play = jax.jit(
        functools.partial(random_returns, env, num_episodes=num_episodes, max_steps=max_steps)
    )
    start = time.perf_counter()
    returns, completed, moves_first, lengths = jax.device_get(play(jax.random.key(seed)))
    seconds = time.perf_counter() - start
    returns = np.asarray(returns, np.float64)
    return {
        "name": name,
        "episodes": num_episodes,
        "mean": float(returns.mean()),
        "stderr": float(returns.std(ddof=1) / np.sqrt(num_episodes)),
        "first_seat_mean": float(returns[moves_first].mean()),
        "completed": float(np.mean(completed)),
        "longest": int(np.max(lengths)),
        "max_steps": max_steps,
        "two_player": env.num_players == 2,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per environment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--envs", nargs="*", default=None, help="environment names (default: the data file's)"
    )
    args = parser.parse_args(argv)
    names = args.envs or list(reference_scores())
    print(machine_description())
    print(f"uniformly random policy, {args.episodes} episodes per environment, seed {args.seed}")
    rows = []
    for name in names:
        result = measure(name, num_episodes=args.episodes, seed=args.seed)
        rows.append(
            [
                name,
                result["episodes"],
                f"{result['mean']:.3f}",
                f"{result['stderr']:.3f}",
                f"{result['first_seat_mean']:.3f}" if result["two_player"] else "-",
                f"{100 * result['completed']:.0f}%",
                result["longest"],
                result["max_steps"],
                f"{result['seconds']:.1f}",
            ]
        )
        print(f"  {name}: {result['mean']:.3f}", file=sys.stderr, flush=True)
    print_table(
        [
            "environment",
            "episodes",
            "mean return",
            "std. error",
            "first-seat mean",
            "completed",
            "longest episode",
            "step cap",
            "seconds (incl. compile)",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
