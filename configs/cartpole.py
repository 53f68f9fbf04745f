"""CartPole-v1 (gymnax): the quick end-to-end check that MuZero learns, about a minute on a laptop CPU.

Measured with ``python benchmarks/learning.py --config cartpole`` (see README for the table). Choices
that mattered in our runs, each compared over two seeds at 60k environment steps (the preset runs 120k, about 90 s):

* discount 0.97 instead of 0.997: with 0.997 the values of good states exceed what the value support
  resolves and Q-values of the two actions become indistinguishable, and every run collapsed;
* Gumbel MuZero with ``rescale_values=False``: with two actions, min-max rescaling maps any Q
  difference, however small, to the full [0, 1] range, so the policy target chased noise;
* ``priority_alpha`` 0.5 and a cosine learning-rate decay over the run: steadier late training.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig

TOTAL_ENV_STEPS = 120_000
NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 4, 4


def config() -> TrainConfig:
    return TrainConfig(
        env="gymnax:CartPole-v1",
        discount=0.97,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=128,
        total_env_steps=TOTAL_ENV_STEPS,
        priority_alpha=0.5,
        learning_rate=3e-3,
        lr_decay_updates=TOTAL_ENV_STEPS // (NUM_ENVS * ROLLOUT_LENGTH) * UPDATES_PER_ITERATION,
        eval_every_env_steps=5_000,
        eval_episodes=20,
        eval_max_steps=500,
        search=SearchConfig(policy="gumbel", num_simulations=16, rescale_values=False),
        network=NetworkConfig(hidden_sizes=(64, 64), latent_size=64),
    )
