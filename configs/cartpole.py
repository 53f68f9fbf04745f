"""CartPole-v1 (gymnax): the quick end-to-end check that MuZero learns, a few minutes on one GPU.

A return near 500 (the time limit) within 60k environment steps is the target; the lead tunes the
values here, so they live in one place.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig


def config() -> TrainConfig:
    return TrainConfig(
        env="gymnax:CartPole-v1",
        discount=0.97,
        num_envs=16,
        rollout_length=4,
        updates_per_iteration=4,
        batch_size=128,
        total_env_steps=60_000,
        eval_every_env_steps=5_000,
        eval_episodes=20,
        eval_max_steps=500,
        learning_rate=3e-3,
        search=SearchConfig(policy="gumbel", num_simulations=16),
        network=NetworkConfig(hidden_sizes=(64, 64), latent_size=64),
    )
