"""Breakout-MinAtar (gymnax): a small Atari-like image benchmark ([10, 10, 4] frames) for the ResNet
network; a GPU/TPU run of about an hour.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig


def config() -> TrainConfig:
    return TrainConfig(
        env="gymnax:Breakout-MinAtar",
        discount=0.997,
        num_envs=64,
        rollout_length=4,
        updates_per_iteration=4,
        batch_size=256,
        total_env_steps=1_000_000,
        replay_capacity=200_000,
        eval_every_env_steps=50_000,
        eval_episodes=32,
        eval_max_steps=2_000,
        lr_decay_updates=15_000,  # about all the updates of the run (1M / 256 x 4)
        search=SearchConfig(policy="gumbel", num_simulations=16),
        network=NetworkConfig(kind="resnet", channels=32, num_blocks=2),
    )
