"""MountainCar-v0 (gymnax): drive an underpowered car up the right hill; -1 a step, 200 at most.

The ``acrobot`` preset's recipe (its docstring says why each part is needed) with εz-greedy's
exponent μ 1.5 instead of 2: longer repeats, since the car must be pushed one way for many steps to
build momentum. Exploratory play (ε 1) reaches the goal in 3.2% of episodes at μ 1.5, 1.7% at μ 2
and never with one-step random actions (``python benchmarks/exploration.py``). No reward shaping.

Seeds 0-1, 200k steps, mean of the last five greedy evaluations (20 episodes every 5,000 steps):
-121 and -143; -150 and -143 with ε 0.5, discount 0.997 and ``td_steps`` 100; -168 and -160 with
ε 0.5. The ``cartpole`` preset stays at -200 on every seed.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig

TOTAL_ENV_STEPS = 200_000
NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 4, 4


def config() -> TrainConfig:
    return TrainConfig(
        env="gymnax:MountainCar-v0",
        discount=0.99,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=128,
        total_env_steps=TOTAL_ENV_STEPS,
        td_steps=50,
        reanalyse_values=False,
        random_action_probability=0.3,
        exploration_repeat_exponent=1.5,
        stop_value_targets_at_exploration=False,
        decoupled_weight_decay=True,
        priority_alpha=0.5,
        learning_rate=3e-3,
        lr_decay_updates=TOTAL_ENV_STEPS // (NUM_ENVS * ROLLOUT_LENGTH) * UPDATES_PER_ITERATION,
        eval_every_env_steps=5_000,
        eval_episodes=20,
        eval_max_steps=200,
        search=SearchConfig(policy="gumbel", num_simulations=16, rescale_values=False),
        network=NetworkConfig(hidden_sizes=(64, 64), latent_size=64),
    )
