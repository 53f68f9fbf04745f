"""MinAtar (gymnax) with the ResNet, wide for one GPU or TPU: 2,048 environments at once, the
network computing in bfloat16, and the replay ratio of ``breakout_minatar`` (four sampled
sequences per environment step) kept by more and larger updates.

An iteration acts 2,048 environments x 2 steps and then makes 16 updates of 1,024 sequences, so
the search evaluates 2,048 roots at a time and the learner's matmuls are large enough to fill an
accelerator; on a CPU use ``breakout_minatar_mlp``. ``--env`` picks another MinAtar game
(``benchmarks/suites/minatar_gpu.toml`` runs the four).

Tuning record: benchmarks/tuning/minatar_gpu.md. Results: benchmarks/RESULTS-gpu.md.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import breakout_minatar


def config() -> TrainConfig:
    return override(
        breakout_minatar.config(),
        {
            "num_envs": 2_048,
            "rollout_length": 2,
            "updates_per_iteration": 16,
            "batch_size": 1_024,
            "replay_capacity": 262_144,  # 64 iterations of 4,096 steps
            "lr_decay_updates": 4_000,  # about all the updates of the run (1M / 4,096 x 16)
            "warmup_updates": 50,
            "unroll_learner": False,  # a GPU runs loops well, and they compile faster
            "network.compute_dtype": "bfloat16",
        },
    )
