"""Environment steps per second of compiled self-play (``mz_jax.training.actor.rollout`` under ``jax.jit``).

One rollout is ``num_steps`` steps of [search, act, step the environments] over E environments, as
one compiled ``lax.scan``: the Anakin loop's acting half. Timed after compilation, as the median of
a few calls (each ended with ``block_until_ready``), with the MLP network of ``mz_jax.networks``
(hidden sizes 64, 64; latent 64), untrained, for both search policies.

    python benchmarks/selfplay.py            # the full table
    python benchmarks/selfplay.py --quick    # fewer configurations, for a smoke test
"""

from __future__ import annotations

import argparse
import functools
import sys

import jax
from common import machine_description, median_seconds, print_table

from mz_jax.config.search import SearchConfig
from mz_jax.envs import make_env
from mz_jax.networks import make_mlp_network
from mz_jax.training import actor

ENVS = ("gymnax:CartPole-v1", "pgx:tic_tac_toe")


def time_rollout(
    env_name: str, *, policy: str, num_envs: int, num_simulations: int, num_steps: int, repeats: int
) -> float:
    """Median seconds of one compiled rollout of ``num_steps`` steps over ``num_envs`` environments."""
    env = make_env(env_name)
    network, params = make_mlp_network(
        jax.random.key(0), observation_shape=env.observation_shape, num_actions=env.num_actions
    )
    config = SearchConfig(
        policy=policy,
        num_simulations=num_simulations,
        discount=0.997,
        two_player=env.num_players == 2,
    )
    rollout = jax.jit(
        functools.partial(
            actor.rollout, env=env, network=network, search_config=config, num_steps=num_steps
        )
    )
    state = actor.init_actor(env, jax.random.key(1), num_envs=num_envs)
    key = jax.random.key(2)
    # The first call (the warm-up of median_seconds) compiles.
    return median_seconds(
        lambda: jax.block_until_ready(rollout(params, key, state)), repeats=repeats
    )


SELFPLAY_HEADERS = [
    "env",
    "policy",
    "simulations",
    "envs",
    "ms/rollout",
    "env steps/s",
    "simulations/s",
]


def selfplay_rows(
    env_names, env_counts, simulation_counts, *, num_steps: int, repeats: int
) -> list[list[object]]:
    """One row of :data:`SELFPLAY_HEADERS` per configuration, both policies; progress on stderr."""
    rows = []
    for env_name in env_names:
        for policy in ("muzero", "gumbel"):
            for num_simulations in simulation_counts:
                for num_envs in env_counts:
                    seconds = time_rollout(
                        env_name,
                        policy=policy,
                        num_envs=num_envs,
                        num_simulations=num_simulations,
                        num_steps=num_steps,
                        repeats=repeats,
                    )
                    steps = num_steps * num_envs
                    rows.append(
                        [
                            env_name,
                            policy,
                            num_simulations,
                            num_envs,
                            f"{1e3 * seconds:.1f}",
                            f"{steps / seconds:,.0f}",
                            f"{steps * num_simulations / seconds:,.0f}",
                        ]
                    )
                    print(f"  done: {' | '.join(map(str, rows[-1]))}", file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer configurations")
    parser.add_argument("--num-steps", type=int, default=16, help="steps per rollout")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per configuration")
    args = parser.parse_args()
    if args.quick:
        env_counts, simulation_counts, repeats = (16, 64), (8,), 3
    else:
        env_counts, simulation_counts, repeats = (16, 64, 256), (8, 32), 5
    repeats = args.repeats or repeats

    print(machine_description())
    print(
        f"mz_jax.training.actor.rollout under jax.jit: {args.num_steps} steps per call, untrained MLP "
        f"network; median of {repeats} calls after compilation; timed on {jax.devices()[0]}"
    )
    print()
    rows = selfplay_rows(
        ENVS, env_counts, simulation_counts, num_steps=args.num_steps, repeats=repeats
    )
    print_table(SELFPLAY_HEADERS, rows)


if __name__ == "__main__":
    main()
