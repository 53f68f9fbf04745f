"""Backgammon (pgx) with Stochastic MuZero for one GPU or TPU: the ``backgammon`` recipe with
1,024 games at once, a wider MLP and 4M moves.

An iteration plays 1,024 games x 2 moves and then makes 16 updates of 1,024 sequences (eight
sampled sequences per move, the replay ratio of ``backgammon``). The network stays float32: the
Stochastic MuZero MLP has no bfloat16 path. Not measured yet: it waits for a GPU lease
(``benchmarks/games/lease.py``).

Tuning record: benchmarks/tuning/backgammon.md. Results: benchmarks/RESULTS-gpu.md.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import backgammon


def config() -> TrainConfig:
    return override(
        backgammon.config(),
        {
            "num_envs": 1_024,
            "rollout_length": 2,
            "updates_per_iteration": 16,
            "batch_size": 1_024,
            "total_env_steps": 4_000_000,
            "replay_capacity": 262_144,  # 128 iterations of 2,048 moves
            "warmup_updates": 50,
            "eval_every_env_steps": 200_000,
            "unroll_learner": False,
            "network.hidden_sizes": (256, 256),
            "network.latent_size": 128,
        },
    )
