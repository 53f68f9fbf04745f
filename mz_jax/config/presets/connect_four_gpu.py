"""Connect four (pgx) for one GPU or TPU: the ``connect_four`` recipe with a spatial ResNet in
bfloat16 and 1,024 games at once.

The spatial network keeps the 6 x 7 board through the representation, the dynamics and the
prediction (the move given as planes); on the CPU it learned what wins where the MLP did not, at
ten times the seconds per step. Here it has 64 channels and 3 blocks a function, and an
iteration plays 1,024 games x 2 moves and then makes 16 updates of 1,024 sequences (eight sampled
sequences per move), for 2M moves. Not measured yet: it waits for a GPU lease
(``benchmarks/games/lease.py``).

Tuning record: benchmarks/tuning/connect_four.md. Results: benchmarks/RESULTS-gpu.md.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import connect_four
from mz_jax.config.presets.game_2048_gpu import ONE_ACCELERATOR


def config() -> TrainConfig:
    return override(
        connect_four.config(),
        {
            **ONE_ACCELERATOR,
            "total_env_steps": 2_000_000,
            "eval_every_env_steps": 100_000,
            "network.kind": "resnet",
            "network.channels": 64,
            "network.num_blocks": 3,
            "network.compute_dtype": "bfloat16",
        },
    )
