"""Breakout-MinAtar (gymnax) sized for a CPU: an MLP on the flattened [10, 10, 4] frame.

The ``breakout_minatar`` preset (a ResNet) is for an accelerator; on two CPU cores it runs about 8 s
per iteration of 256 environment steps. This one runs 1M environment steps and 62,500 learner
updates in 21 to 42 minutes on two CPU cores with the machine to itself: 1,281 s for seed 0 on the
machine it was first measured on, 2,498 s on another (compilation and evaluations included).

First measured with the L2 term in the loss (``mz-jax train --config breakout_minatar_mlp --seed
0``, then ``--seed 1 --num-seeds 2``; greedy evaluations of 16 episodes every 50k steps; the
uniformly random policy scores 0.43): seeds 0 and 2 rise above 2 by 100k and 250k steps and end at
a greedy return of 2.96 and 4.48 (``mz-jax eval --episodes 256`` of the final checkpoint; mean of
their last five evaluations 3.60 and 4.69).
Seed 1 rose to 1.6 by 200k, fell back to the random level from 250k to 650k and ended at 1.04 (last
five evaluations 1.86): one seed in three unstable, not investigated further.

Decoupled weight decay (AdamW, ``decoupled_weight_decay``) rather than the L2 term in the loss:
seeds 0-2 as one program, 300k steps, greedy evaluations (16 episodes) every 50k steps went
2, 3, 6, 6, 6, 7 / 1, 3, 4, 6, 8, 8 / 2, 4, 4, 5, 5, 6 (2,637 s for the three seeds, beside another
run), where the L2 version above ended its 1M steps at 2.96, 1.04 and 4.48. Under Adam an L2
gradient ``weight_decay * w`` on a weight the loss barely moves becomes a step of about
``lr * sign(w)``, which drives such weights to zero (measured on Acrobot: every representation
weight below 1e-6); AdamW shrinks each weight by ``lr * weight_decay * w`` instead.
Seed 0 of this preset over the whole 1M steps (``mz-jax train --config breakout_minatar_mlp --seed
0``, 2,498 s): greedy evaluations 3.8, 5.0, 5.1, 6.6, 7.4, 7.0, 7.4, 8.0, 7.0, 10.3, 7.4, 13.5, 8.6,
9.5, 9.4, 11.1, 10.5, 13.4, 13.6, 13.5 every 50k steps; ``mz-jax eval --episodes 256`` of the final
checkpoint 13.48 (the L2 version's seed 0: 2.96). Seed 20, never used for a choice (2,380 s): 2.3,
4.9, 6.6, 7.0, 7.0, 7.0, 8.0, 9.4, 9.5, 10.6, 11.0, 15.6, 9.4, 20.1, 16.4, 13.1, 13.0, 15.9, 15.1,
14.5; its final checkpoint 15.77 over 256 episodes. Seeds 1 and 2 as one program (``--seed 1
--num-seeds 2``, 8,862 s beside other runs): 3.9, 8.1, 6.6, 9.0, 9.4, 9.7, 9.6, 10.0, 12.2, 10.7,
11.6, 13.7, 12.6, 18.1, 21.6, 10.5, 26.7, 15.8, 22.1, 22.9 / 3.0, 4.1, 6.0, 5.1, 5.8, 7.2, 7.5, 7.5,
7.4, 8.0, 9.4, 10.5, 9.5, 12.0, 17.8, 16.0, 15.9, 17.6, 18.0, 18.0; their final checkpoints 22.44
and 18.00 over 256 episodes. Seeds 0-2: 13.48, 22.44 and 18.00, a mean of 17.97.

A 3x3 convolution with 16 channels before the representation's dense layers
(``network.conv_channels=16``, the MinAtar paper's DQN network; seeds 10-11 as one program, 200k
steps, 16 greedy episodes every 25k steps): 3.9, 5.0, 5.0, 5.6, 5.5, 6.6, 6.6, 6.4 / 3.0, 5.3,
4.8, 6.0, 5.6, 6.3, 6.9, 6.5, where this preset went 1.6, 4.1, 3.4, 3.4, 6.0, 5.1, 6.6, 6.0 / 0.9,
2.5, 3.8, 3.0, 3.6, 6.1, 6.6, 5.5: ahead at every evaluation, most in the first 100k steps, and
level by 200k. It costs about 3x the time per environment step on two CPU cores (the
representation also encodes every bootstrap observation of the fresh value targets), so this
preset keeps the plain MLP.

What it needed beyond an MLP: many updates per environment step (4 updates of batch 128 for every
64 steps; a variant with 2 updates per 128 steps, 16k in all, stayed at the random policy's 0.43
for 1M steps), and CartPole's recipe for the targets: values bootstrapped from the network's current
values (``reanalyse_values``), ``td_steps`` 5, discount 0.99, priorities to the power 0.5 and the
learning rate decayed over the run.
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
