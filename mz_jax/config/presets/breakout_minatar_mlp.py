"""Breakout-MinAtar (gymnax) sized for a CPU: an MLP on the flattened [10, 10, 4] frame.

The ``breakout_minatar`` preset (a ResNet) is for an accelerator; on two CPU cores it runs about 8 s
per iteration of 256 environment steps. This one runs 1M environment steps and 62,500 learner
updates in 21 to 42 minutes on two CPU cores with the machine to itself. What it needed beyond an
MLP: many updates per environment step (4 updates of batch 128 for every 64 steps; 2 per 128 steps
stayed at the random policy's level), CartPole's recipe for the targets (values bootstrapped from
the network's current values, ``reanalyse_values``, ``td_steps`` 5, discount 0.99, priorities to the
power 0.5 and the learning rate decayed over the run), and decoupled weight decay (AdamW,
``decoupled_weight_decay``: under Adam an L2 term drives the weights the loss barely moves to zero).
A 3x3 convolution before the dense layers learned sooner but cost about 3x the time per environment
step on two CPU cores, so this preset keeps the plain MLP.

``mz-jax train --config breakout_minatar_mlp --seed 0``, then ``--seed 1 --num-seeds 2``, and
``mz-jax eval --episodes 256`` of the final checkpoints: 13.48, 22.44 and 18.00 for seeds 0-2, a
mean of 17.97 (the uniformly random policy scores 0.43); seed 20, never used for a choice, 15.77.

Every measurement behind these settings, and what was tried and not adopted:
benchmarks/tuning/breakout_minatar_mlp.md.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig

NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 4, 4
TOTAL_ENV_STEPS = 1_000_000


def config() -> TrainConfig:
    return TrainConfig(
        env="gymnax:Breakout-MinAtar",
        discount=0.99,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=128,
        total_env_steps=TOTAL_ENV_STEPS,
        td_steps=5,
        reanalyse_values=True,
        target_update_every=1,
        priority_alpha=0.5,
        value_loss_weight=0.5,
        lr_decay_updates=TOTAL_ENV_STEPS // (NUM_ENVS * ROLLOUT_LENGTH) * UPDATES_PER_ITERATION,
        replay_capacity=200_000,
        decoupled_weight_decay=True,
        eval_every_env_steps=50_000,
        eval_episodes=16,
        eval_max_steps=2_000,
        search=SearchConfig(policy="gumbel", num_simulations=16),
        network=NetworkConfig(kind="mlp", hidden_sizes=(256, 256), latent_size=128),
    )
