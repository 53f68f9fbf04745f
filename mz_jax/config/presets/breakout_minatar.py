"""Breakout-MinAtar (gymnax): a small Atari-like image benchmark ([10, 10, 4] frames) for the ResNet
network, meant for a GPU or TPU.

On one H100, seeds 23-24 as one program ended their 1M steps at greedy returns of 66.2 and 28.4
(491 s in all; mean evaluations 6.2, 11.4, 16.2 and 47.3 at 250k, 500k, 750k and 1M steps), both
at or past gymnax's PPO checkpoint (28, trained on 10M steps); seeds 20-22 reached 7.5, 4.1 and 3.0
at 200k steps. With ``--env`` set to the other MinAtar games (seed 40, one H100, stopped part-way)
it reached greedy returns of 21.2 on Freeway and 47.0 on SpaceInvaders at 250k, a third of the
way from random to PPO on each; on one H200, Asterix's seeds 60-61 ended their 1M steps at 10.5 and
24.4 (PPO 15; 488 s in all). benchmarks/RESULTS-gpu.md has the tables.
The README has the commands. On two CPU cores
1M steps take about 9 hours (7.9 s per iteration of 256 environment steps with the machine to
itself; 58 s before the learner was traced as straight-line code, ``TrainConfig.unroll_learner``).
On a CPU use ``breakout_minatar_mlp``, measured over 1M steps on two cores (21 to 42 minutes a
seed, by machine; greedy returns of 13.5, 22.4, 18.0 and 15.8 for seeds 0, 1, 2 and 20 against
the random policy's 0.43; benchmarks/tuning/breakout_minatar_mlp.md has the evaluations).
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
        # Measured with the L2 term in the loss (the default before decoupled weight decay).
        decoupled_weight_decay=False,
        eval_every_env_steps=50_000,
        eval_episodes=32,
        eval_max_steps=2_000,
        # The defaults this preset was written with (stored search values, priorities^1).
        td_steps=10,
        priority_alpha=1.0,
        reanalyse_values=False,
        target_update_every=100,
        lr_decay_updates=15_000,  # about all the updates of the run (1M / 256 x 4)
        search=SearchConfig(policy="gumbel", num_simulations=16),
        network=NetworkConfig(kind="resnet", channels=32, num_blocks=2),
    )
