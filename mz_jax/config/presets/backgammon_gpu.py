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
from mz_jax.config.presets.game_2048_gpu import ONE_ACCELERATOR


def config() -> TrainConfig:
    return override(
        backgammon.config(),
        {
            **ONE_ACCELERATOR,
            "total_env_steps": 4_000_000,
            "eval_every_env_steps": 200_000,
            "network.hidden_sizes": (256, 256),
            "network.latent_size": 128,
        },
    )
