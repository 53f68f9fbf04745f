"""Does a trained network's value predict the return it then earns? Greedy episodes of a run.

    python benchmarks/diagnostics/value_calibration.py RUN_WORKDIR [--step STEP] [--episodes 20]

For every seed of the run (its newest good checkpoint, or the checkpoint ``--step``),
``--episodes`` greedy episodes are played as the evaluation plays them (the search with
``greedy=True``), each from a reset to its first end. At every state s of them it records the
network's value v(s) (the representation and prediction functions, no search) and, once the episode
is over, the discounted return G(s) the agent earned from s: the rewards to the episode's end, plus
at a truncation (the environment's time limit or ``--max-steps``) the network's value of the
observation reached there. The table gives, over all those states, the mean v and G, their
correlation, the mean |v - G|, and the mean v and G of the quarter of the states with the lowest G
(the states nearest a failure) and of the quarter with the highest. A value that ranks states well
correlates with G and is lower in the lowest quarter.

Single-player environments only (a two-player value changes sign between plies).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.core.transforms import logits_to_scalar
from mz_jax.mcts.policies import search
from mz_jax.run.agent import Agent, restore_run_state


def realised_returns(
    reward: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    bootstrap: np.ndarray,
    *,
    discount: float,
) -> np.ndarray:
    """``G[t] = reward[t] + discount * (G[t + 1], or bootstrap[t] where truncated[t], or 0 where
    terminated[t])`` for arrays ``[T, E]`` (time first). Rows after an episode's end are ignored
    by the caller; a row that is neither terminated nor truncated needs a row after it."""
    returns = np.zeros(reward.shape, np.float64)
    following = np.zeros(reward.shape[1:], np.float64)
    for t in reversed(range(reward.shape[0])):
        following = np.where(terminated[t], 0.0, np.where(truncated[t], bootstrap[t], following))
        returns[t] = reward[t] + discount * following
        following = returns[t]
    return returns


def summarise(value: np.ndarray, returns: np.ndarray) -> dict[str, float]:
    """Calibration of ``value`` against ``returns`` (1-D, one entry per visited state)."""
    low, high = np.quantile(returns, [0.25, 0.75])
    lowest, highest = returns <= low, returns >= high
    spread = np.std(value) * np.std(returns)
    return {
        "mean_v": float(np.mean(value)),
        "mean_g": float(np.mean(returns)),
        "corr": float(np.mean((value - value.mean()) * (returns - returns.mean())) / spread)
        if spread > 0
        else float("nan"),
        "mean_abs_error": float(np.mean(np.abs(value - returns))),
        "lowest_v": float(np.mean(value[lowest])),
        "lowest_g": float(np.mean(returns[lowest])),
        "highest_v": float(np.mean(value[highest])),
        "highest_g": float(np.mean(returns[highest])),
    }


def make_play(agent: Agent, *, episodes: int, max_steps: int):
    """``play(params, key)``: ``[max_steps, episodes]`` records of greedy play with ``agent``'s
    environment, network and search: observation (the one acted on), value, reward, terminated,
    truncated, bootstrap (the value of the observation a truncation reached) and alive (the row
    belongs to the episode's first run).
    One program for every seed of a run: only the parameters differ between them."""
    env, network = agent.env, agent.network
    greedy = functools.partial(search, network=network, config=agent.search_config, greedy=True)

    def value_of(params, observation):
        output, _ = network.initial_inference(params, observation)
        return logits_to_scalar(output.value_logits)

    def one_step(params, carry, step_key):
        state, timestep, alive = carry
        search_key, env_key = jax.random.split(step_key)
        out = greedy(params, search_key, timestep.observation, timestep.legal_action_mask)
        value = value_of(params, timestep.observation)
        env_keys = jax.random.split(env_key, episodes)
        state, next_step = jax.vmap(env.step)(env_keys, state, out.action)
        record = {
            "observation": timestep.observation,
            "value": value,
            "reward": next_step.reward,
            "terminated": next_step.terminated,
            "truncated": next_step.truncated,
            "bootstrap": value_of(params, next_step.final_observation),
            "alive": alive,
        }
        ended = next_step.terminated | next_step.truncated
        return (state, next_step, alive & ~ended), record

    @jax.jit
    def run(params, key):
        reset_key, steps_key = jax.random.split(key)
        state, timestep = jax.vmap(env.reset)(jax.random.split(reset_key, episodes))
        alive = jnp.ones((episodes,), bool)
        _, records = jax.lax.scan(
            functools.partial(one_step, params),
            (state, timestep, alive),
            jax.random.split(steps_key, max_steps),
        )
        return records

    def play(params, key: jax.Array) -> dict[str, np.ndarray]:
        records = jax.tree.map(np.array, run(params, key))  # writable copies
        # An episode still running after max_steps is truncated at its last row.
        records["truncated"][-1] |= records["alive"][-1] & ~records["terminated"][-1]
        return records

    return play


def calibrate(
    workdir: str, *, step: int | None = None, episodes: int, max_steps: int, seed: int
) -> list[list[object]]:
    run = restore_run_state(workdir, step=step)  # read once: every seed's parameters are in it
    rows, play = [], None
    for index in range(run.config.num_seeds):
        agent = run.agent(index)
        if agent.env.num_players != 1:
            raise ValueError(
                f"{agent.env.name} has {agent.env.num_players} players; value_calibration.py "
                "reads single-player values only"
            )
        if play is None:  # compiled once: the seeds of a run share everything but parameters
            play = make_play(agent, episodes=episodes, max_steps=max_steps)
        records = play(agent.params, jax.random.key(seed))
        returns = realised_returns(
            records["reward"],
            records["terminated"],
            records["truncated"],
            records["bootstrap"],
            discount=agent.config.discount,
        )
        alive = records["alive"]
        lengths = alive.sum(axis=0)
        ended = (records["terminated"] & alive).any(axis=0)
        stats = summarise(records["value"][alive], returns[alive])
        rows.append(
            [
                agent.config.seed,
                f"{agent.env_steps:,}",
                f"{lengths.mean():.1f}",
                f"{int(ended.sum())}/{episodes}",
                f"{stats['mean_v']:.1f}",
                f"{stats['mean_g']:.1f}",
                f"{stats['corr']:+.2f}",
                f"{stats['mean_abs_error']:.1f}",
                f"{stats['lowest_v']:.1f} / {stats['lowest_g']:.1f}",
                f"{stats['highest_v']:.1f} / {stats['highest_g']:.1f}",
            ]
        )
    return rows


def parse_play_arguments(parser: argparse.ArgumentParser, *, episodes: int) -> argparse.Namespace:
    """``parser``'s arguments with those of greedy play from a run's checkpoint: ``workdir``,
    ``--step``, ``--episodes`` (default ``episodes``), ``--max-steps`` and ``--seed``."""
    parser.add_argument("workdir", help="a training run's directory (one or several seeds)")
    parser.add_argument("--step", type=int, default=None, help="a checkpoint (default: newest)")
    parser.add_argument("--episodes", type=int, default=episodes)
    parser.add_argument("--max-steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=123, help="the episodes' PRNG seed")
    args = parser.parse_args()
    if args.episodes < 1 or args.max_steps < 1:
        parser.error(
            f"--episodes and --max-steps must be >= 1; got {args.episodes} and {args.max_steps}"
        )
    return args


def play_rows(table: Callable[..., list[list[object]]], args: argparse.Namespace) -> list:
    """``table``'s rows (``calibrate``, or a function called as it is) for the arguments of
    :func:`parse_play_arguments`; no run there, no such checkpoint, or a run it cannot read exits
    with the message."""
    try:
        return table(
            args.workdir,
            step=args.step,
            episodes=args.episodes,
            max_steps=args.max_steps,
            seed=args.seed,
        )
    except (FileNotFoundError, ValueError) as error:
        raise SystemExit(f"error: {error}") from None


def main() -> None:
    args = parse_play_arguments(
        argparse.ArgumentParser(description=__doc__.split("\n\n")[0]), episodes=20
    )
    rows = play_rows(calibrate, args)
    print(f"machine: {machine_description()}")
    print(
        f"run {args.workdir}: {args.episodes} greedy episodes a seed, at most {args.max_steps} steps"
    )
    print_table(
        [
            "seed",
            "env steps",
            "mean length",
            "terminated",
            "mean v",
            "mean G",
            "corr(v, G)",
            "mean |v - G|",
            "lowest quarter of G: v / G",
            "highest quarter: v / G",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
