"""2048 (pgx) with Stochastic MuZero for one GPU or TPU: the ``game_2048`` recipe with 1,024 games
at once and 2M moves.

An iteration plays 1,024 games x 2 moves and then makes 16 updates of 1,024 sequences (eight
sampled sequences per move, the replay ratio of ``game_2048``). MuZero's counterpart, for the
comparison, is this preset with ``--network.num-chance-outcomes None``. The network stays float32:
the Stochastic MuZero MLP has no bfloat16 path. Not measured yet: it waits for a GPU lease
(``benchmarks/games/lease.py``).

Tuning record: benchmarks/tuning/game_2048.md. Results: benchmarks/RESULTS-gpu.md.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import game_2048

ONE_ACCELERATOR = {
    "num_envs": 1_024,
    "rollout_length": 2,
    "updates_per_iteration": 16,
    "batch_size": 1_024,
    "replay_capacity": 262_144,  # 128 iterations of 2,048 moves
    "warmup_updates": 50,
    "unroll_learner": False,  # a GPU runs loops well, and they compile faster
}
"""The sizes the board and chance games' GPU presets share: 1,024 games x 2 moves an iteration,
then 16 updates of 1,024 sequences (eight sampled sequences per move)."""


def config() -> TrainConfig:
    return override(
        game_2048.config(),
        {
            **ONE_ACCELERATOR,
            "total_env_steps": 2_000_000,
            "eval_every_env_steps": 100_000,
            "network.hidden_sizes": (256, 256),
            "network.latent_size": 128,
        },
    )
