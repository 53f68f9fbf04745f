"""Stochastic MuZero against MuZero on ``toy:gamble``, a choice whose best move depends on a coin.

``toy:gamble`` (:mod:`mz_jax.envs.toy`): play safe for a sure 3/4, or gamble on a fair coin whose
side is seen before the second move; playing the side's move then pays 1. Gambling is optimal
(return 1), but a deterministic model's search that looks past the coin sees each second move pay
1/2 on average and plays safe (return 3/4). Three agents train with the same settings, seeds as one
program each, and are evaluated greedily (64 episodes) every ``--eval-every`` environment steps:
MuZero; Stochastic MuZero with the commitment term (β = 0.25, VQ-VAE's); and Stochastic MuZero with
β = 0 and the consistency loss (weight 2), against the encoder giving both sides one code.
``--models`` picks among them and a fourth, the last with SPR's momentum encoder for the
consistency targets.

The table gives, per model, the environment steps at which each seed's greedy evaluation first
reached the optimal return (0.99 or more), how many seeds play optimally at given budgets, the final
greedy return, and the search's root value at the start (the exact optimal value is 1).

    python benchmarks/investigations/gamble.py
    python benchmarks/investigations/gamble.py --seeds 6 --first-seed 100 --steps 12000
    python benchmarks/investigations/gamble.py --seeds 6 --first-seed 100 --models consistency momentum
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

import mz_jax
from mz_jax import NetworkConfig, SearchConfig, StochasticConfig, TrainConfig
from mz_jax.core.unroll import STRAIGHT_THROUGH
from mz_jax.envs.toy import START
from mz_jax.run.agent import Agent
from mz_jax.run.loop import run_training
from mz_jax.run.records import evaluation_curves

OPTIMAL = 0.99  # a greedy evaluation this high gambles and plays the coin's side in every episode
MODELS = ("muzero", "commitment", "consistency", "momentum")


def config(
    chance_outcomes: int | None,
    *,
    seed: int,
    seeds: int,
    steps: int,
    eval_every: int,
    commitment: float = 0.25,
    consistency: float = 0.0,
    momentum_encoder: bool = False,
    straight_through: str = "softmax",
) -> TrainConfig:
    """The settings every model trains with; ``network.num_chance_outcomes`` (None: MuZero), the
    loss weights ``commitment_loss_weight`` and ``consistency_loss_weight``, SPR's momentum encoder
    for the consistency targets (``consistency_target_params`` with ``target_ema_decay`` 0.99) and
    the chance code's ``chance_straight_through`` set the model."""
    return TrainConfig(
        env="toy:gamble",
        # Measured with the L2 term in the loss (the default before decoupled weight decay).
        decoupled_weight_decay=False,
        seed=seed,
        num_seeds=seeds,
        discount=1.0,
        num_envs=16,
        rollout_length=4,
        updates_per_iteration=16,
        batch_size=64,
        total_env_steps=steps,
        num_unroll_steps=5,
        td_steps=2,
        replay_capacity=5_000,
        learning_rate=3e-3,
        consistency_loss_weight=consistency,
        target_ema_decay=0.99 if momentum_encoder else 0.0,
        consistency_target_params=momentum_encoder,
        stochastic=StochasticConfig(
            commitment_loss_weight=commitment, chance_straight_through=straight_through
        ),
        eval_every_env_steps=eval_every,
        eval_episodes=64,
        eval_max_steps=2,
        log_every_seconds=60.0,
        checkpoint_every_seconds=1e6,
        search=SearchConfig(policy="muzero", num_simulations=32),
        network=NetworkConfig(
            kind="mlp", hidden_sizes=(32,), latent_size=16, num_chance_outcomes=chance_outcomes
        ),
    )


def root_values(workdir: Path, seeds: int) -> list[float]:
    """Each seed's final search value at the start state (greedy search, one key)."""
    values = []
    for index in range(seeds):
        agent = Agent.restore(workdir, seed_index=index)
        observation = jax.nn.one_hot(jnp.array([START]), agent.env.observation_shape[0])
        out = mz_jax.search(
            agent.params,
            jax.random.key(0),
            observation,
            jnp.ones((1, 2), bool),
            network=agent.network,
            config=agent.search_config,
        )
        values.append(float(out.root_value[0]))
    return values


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=12_000, help="environment steps per seed")
    parser.add_argument("--eval-every", type=int, default=1_000)
    parser.add_argument(
        "--chance-outcomes", type=int, default=2, help="Stochastic MuZero's codebook size C"
    )
    parser.add_argument(
        "--budgets", type=int, nargs="+", default=[3_000, 6_000], help="steps to count seeds at"
    )
    parser.add_argument(
        "--straight-through",
        choices=STRAIGHT_THROUGH,
        default="softmax",
        help="what the chance code's straight-through gradient reaches (chance_straight_through)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=MODELS,
        default=MODELS[:3],
        help="which to train: MuZero, Stochastic MuZero with the commitment term, with the "
        "consistency loss instead, and that with SPR's momentum encoder for its targets",
    )
    args = parser.parse_args(argv)
    print(machine_description())
    print(
        f"toy:gamble: seeds {args.first_seed}-{args.first_seed + args.seeds - 1} as one program per "
        f"model, {args.steps:,} env steps, greedy evaluation every {args.eval_every:,}, the chance "
        f"code's straight-through gradient on the encoder's {args.straight_through}"
    )
    c = args.chance_outcomes
    consistency = {"commitment": 0.0, "consistency": 2.0}
    models = {
        "muzero": ("MuZero", None, {}),
        "commitment": (f"Stochastic MuZero, C = {c}, commitment β = 0.25", c, {}),
        "consistency": (f"Stochastic MuZero, C = {c}, β = 0, consistency 2", c, consistency),
        "momentum": (
            f"Stochastic MuZero, C = {c}, β = 0, consistency 2, momentum encoder",
            c,
            {**consistency, "momentum_encoder": True},
        ),
    }
    models = [models[key] for key in args.models]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for index, (name, chance_outcomes, weights) in enumerate(models):
            workdir = Path(scratch) / f"model_{index}"
            cfg = config(
                chance_outcomes,
                seed=args.first_seed,
                seeds=args.seeds,
                steps=args.steps,
                eval_every=args.eval_every,
                straight_through=args.straight_through,
                **weights,
            )
            start = time.perf_counter()
            run_training(cfg, workdir)
            seconds = time.perf_counter() - start
            curves = evaluation_curves(workdir, default_seed=args.first_seed)
            first, finals = [], []
            for seed in sorted(curves):
                curve = curves[seed]
                hits = np.flatnonzero(np.asarray(curve.returns) >= OPTIMAL)
                first.append(None if hits.size == 0 else int(curve.env_steps[hits[0]]))
                finals.append(float(curve.returns[-1]))
            at_budget = []
            for budget in args.budgets:
                optimal = sum(
                    bool(
                        np.any(
                            np.asarray(curve.returns)[np.asarray(curve.env_steps) <= budget]
                            >= OPTIMAL
                        )
                    )
                    for curve in curves.values()
                )
                at_budget.append(f"{optimal} of {len(curves)}")
            values = root_values(workdir, args.seeds)
            shutil.rmtree(workdir, ignore_errors=True)
            rows.append(
                [
                    name,
                    ", ".join("-" if f is None else f"{f:,}" for f in first),
                    *at_budget,
                    f"{statistics.mean(finals):.2f} ({', '.join(f'{f:.2f}' for f in finals)})",
                    ", ".join(f"{v:.2f}" for v in values),
                    f"{seconds:.0f}",
                ]
            )
            print(f"  {name}: done in {seconds:.0f} s", file=sys.stderr, flush=True)
    print_table(
        [
            "model",
            "env steps to optimal play, per seed",
            *(f"seeds optimal by {b:,}" for b in args.budgets),
            "final greedy return, mean (per seed)",
            "root value at the start (exact: 1)",
            "seconds",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
