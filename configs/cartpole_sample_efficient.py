"""CartPole-v1 (gymnax) from few environment steps: one learner update per environment step.

The ``cartpole`` preset acts fast (16 environments x 4 steps per iteration, 12,500 updates over 200k
steps: 0.06 updates per step) and reaches a greedy 475 within about a minute of wall time, after 15k
to 110k environment steps. This one spends its compute on learning instead, as LightZero does:
4 environments x 2 steps per iteration and 8 updates of batch 256, so 20k environment steps meet
20k updates, evaluated every 1,000 steps. Everything else is the ``cartpole`` preset (fresh values
with ``td_steps`` 5, discount 0.99, Gumbel search with 16 simulations).

Three seeds run as one program (``--num-seeds 3``), environment steps at the first greedy
evaluation (20 episodes, every 1,000 steps) of at least 475:

* 1 update per step, batch 128: 3k, 7k and not reached in 20k (the last seed stayed near 300);
* the same with 32 simulations: 16k, not reached, 5k;
* 2 updates per step, batch 128, 10k steps: not reached, not reached, 6k;
* 1 update per step, batch 256 (this preset): 11k, 12k and 13k.

Plain runs of this preset (``python benchmarks/learning.py --config cartpole_sample_efficient
--seeds 0 1 2``, 161-169 s a run on two CPU cores): seeds 1 and 2 reach 475 after 12k and 13k steps
(101 and 113 s); seed 0 stays at 180-320 for the whole run. A plain run of the batch-128 variant
reached 460 after 5k steps and 500 after 12k. Within about 2 minutes, then, this preset learns
CartPole from 12k-13k environment steps in two seeds of three; the ``cartpole`` preset reaches 475
in every seed measured, from more steps.
"""

import dataclasses
from pathlib import Path

from mz_jax import TrainConfig
from mz_jax.presets import load_preset

TOTAL_ENV_STEPS = 20_000
NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 4, 2, 8


def config() -> TrainConfig:
    cartpole = load_preset(str(Path(__file__).with_name("cartpole.py")))
    return dataclasses.replace(
        cartpole,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=256,
        total_env_steps=TOTAL_ENV_STEPS,
        lr_decay_updates=TOTAL_ENV_STEPS // (NUM_ENVS * ROLLOUT_LENGTH) * UPDATES_PER_ITERATION,
        replay_capacity=TOTAL_ENV_STEPS,
        eval_every_env_steps=1_000,
    )
