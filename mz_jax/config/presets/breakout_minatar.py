"""Breakout-MinAtar (gymnax): a small Atari-like image benchmark ([10, 10, 4] frames) for the ResNet
network, meant for a GPU or TPU.

On one GPU its 1M environment steps take minutes, and on Breakout both seeds measured end at or
past gymnax's PPO checkpoint (trained on 10M steps); on two CPU cores they take about 9 hours, so
on a CPU use ``breakout_minatar_mlp``. It keeps the defaults it was written with (stored search
values, the L2 term in the loss) and has not been tuned.

Tuning record: benchmarks/tuning/breakout_minatar.md. Results: benchmarks/RESULTS-gpu.md (learning,
on a GPU) and benchmarks/RESULTS.md#breakout_minatar (its learner on a CPU).
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override


def config() -> TrainConfig:
    return override(
        TrainConfig(),
        {
            "env": "gymnax:Breakout-MinAtar",
            "discount": 0.997,
            "num_envs": 64,
            "rollout_length": 4,
            "updates_per_iteration": 4,
            "batch_size": 256,
            "total_env_steps": 1_000_000,
            "replay_capacity": 200_000,
            # Measured with the L2 term in the loss (the default before decoupled weight decay).
            "decoupled_weight_decay": False,
            "eval_every_env_steps": 50_000,
            "eval_episodes": 32,
            "eval_max_steps": 2_000,
            # The defaults this preset was written with (stored search values, priorities^1).
            "td_steps": 10,
            "priority_alpha": 1.0,
            "reanalyse_values": False,
            "target_update_every": 100,
            "lr_decay_updates": 15_000,  # about all the updates of the run (1M / 256 x 4)
            "search.policy": "gumbel",
            "search.num_simulations": 16,
            "network.kind": "resnet",
            "network.channels": 32,
            "network.num_blocks": 2,
        },
    )
