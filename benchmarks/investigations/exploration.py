"""How often exploratory play reaches the goal of a sparse-goal environment: ε-greedy against εz-greedy.

MountainCar-v0 and Acrobot-v1 end early (``terminated``) only at their goal; until then every step
costs -1. An agent learns where the goal is only from episodes that got there, so the first question
for exploration is how often its exploratory play does. This plays the self-play actor
(:func:`mz_jax.training.actor.rollout`) with ``random_action_probability`` 1 (every step exploratory) and each
``exploration_repeat_exponent``: none (a fresh uniformly random action at every step) or μ (εz-greedy:
each random action repeated for n ~ Zeta(μ) steps), and counts the episodes that ended at the goal.
No learning is involved: the search runs (an untrained network, 2 simulations) but its actions are
all replaced.

    python benchmarks/investigations/exploration.py
    python benchmarks/investigations/exploration.py --envs gymnax:MountainCar-v0 --exponents none 2 --steps 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
from common import machine_description, print_table

from mz_jax import networks
from mz_jax.config.search import SearchConfig
from mz_jax.envs import make_env
from mz_jax.training import actor

ENVS = ("gymnax:MountainCar-v0", "gymnax:Acrobot-v1")
EXPONENTS = (None, 3.0, 2.0, 1.5, 1.2)


def goal_rate(name: str, exponent: float | None, *, num_envs: int, num_steps: int, seed: int):
    """``(episodes ended, episodes ended at the goal, mean return of the ended ones, seconds)``."""
    env = make_env(name)
    _, timestep = env.reset(jax.random.key(0))
    num_actions = timestep.legal_action_mask.shape[-1]
    network, params = networks.make_mlp_network(
        jax.random.key(seed),
        observation_shape=timestep.observation.shape,
        num_actions=num_actions,
        hidden_sizes=(8,),
        latent_size=8,
    )
    config = SearchConfig(
        policy="gumbel",
        num_simulations=2,
        max_num_considered_actions=num_actions,
        discount=0.99,
        two_player=False,
    )

    @jax.jit
    def play(key):
        init_key, rollout_key = jax.random.split(key)
        state = actor.init_actor(
            env, init_key, num_envs=num_envs, repeat_exploration=exponent is not None
        )
        _, trajectory, stats = actor.rollout(
            params,
            rollout_key,
            state,
            env=env,
            network=network,
            search_config=config,
            num_steps=num_steps,
            random_action_probability=1.0,
            exploration_repeat_exponent=exponent,
        )
        return stats.episodes, jnp.sum(trajectory.terminated), stats.return_sum

    start = time.perf_counter()
    episodes, goals, return_sum = (int(x) for x in jax.device_get(play(jax.random.key(seed))))
    return episodes, goals, return_sum / max(episodes, 1), time.perf_counter() - start


def _exponent(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument(
        "--exponents",
        nargs="+",
        type=_exponent,
        default=list(EXPONENTS),
        help="'none' (ε-greedy) or μ > 1 (εz-greedy)",
    )
    parser.add_argument("--num-envs", type=int, default=256, help="environments side by side")
    parser.add_argument("--steps", type=int, default=2000, help="steps each environment plays")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(machine_description())
    print(
        f"random_action_probability 1: {args.num_envs} environments x {args.steps} steps each, "
        f"seed {args.seed}"
    )
    rows = []
    for name in args.envs:
        for exponent in args.exponents:
            episodes, goals, mean_return, seconds = goal_rate(
                name, exponent, num_envs=args.num_envs, num_steps=args.steps, seed=args.seed
            )
            rows.append(
                [
                    name,
                    "none (ε-greedy)" if exponent is None else f"{exponent:g}",
                    f"{episodes:,}",
                    f"{goals:,}",
                    f"{100 * goals / max(episodes, 1):.1f}%",
                    f"{mean_return:.1f}",
                    f"{seconds:.1f}",
                ]
            )
            print(f"  {name} {exponent}: {goals} of {episodes}", file=sys.stderr, flush=True)
    print_table(
        [
            "environment",
            "repeat exponent μ",
            "episodes ended",
            "at the goal",
            "share",
            "mean return",
            "seconds (incl. compile)",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
