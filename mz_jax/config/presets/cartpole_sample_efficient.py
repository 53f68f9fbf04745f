"""CartPole-v1 (gymnax) from few environment steps: EfficientZero's consistency loss, two learner
updates per environment step, 16 environments.

The ``cartpole`` preset with its compute spent on learning: two updates of batch 64 per environment
step, a wider network, each observation feature scaled to about its size, SPR's momentum encoder
for the consistency targets and value bootstraps, returns over 30 steps on windows that may run
past the newest step, and the learning rate decayed over the first half of its 8,000 steps. Most
seeds reach a greedy 475 within about 1,500 environment steps; a few take several thousand more
(``benchmarks/diagnostics/cartpole_failures.py`` shows why).

Tuning record: benchmarks/tuning/cartpole_sample_efficient.md. Results:
benchmarks/RESULTS.md#cartpole_sample_efficient.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import cartpole

TOTAL_ENV_STEPS = 8_000
NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 1, 32
# The cart's position, its velocity, the pole's angle and its angular velocity, each times about
# the inverse of its size while the pole is balanced (up to 2.4, about 0.5, 0.05 and 0.5).
OBSERVATION_SCALE = (1.0, 2.0, 20.0, 2.0)
# Returns over this many steps (with discount 0.99, the bootstrap weighs 0.99^30 = 0.74): most of a
# failure's cost reaches each state in one target, not one round of bootstraps per 5 steps.
TD_STEPS = 30
# The momentum encoder averages about the last 1 / (1 - 0.995) = 200 updates (100 env steps).
TARGET_EMA_DECAY = 0.995


def config() -> TrainConfig:
    preset = override(
        cartpole.config(),
        {
            "num_envs": NUM_ENVS,
            "rollout_length": ROLLOUT_LENGTH,
            "updates_per_iteration": UPDATES_PER_ITERATION,
            "batch_size": 64,
            "learning_rate": 1e-3,
            "total_env_steps": TOTAL_ENV_STEPS,
            "replay_capacity": TOTAL_ENV_STEPS,
            "eval_every_env_steps": 500,
            "value_loss_weight": 0.5,
            "consistency_loss_weight": 5.0,
            "augment_reflection": True,
            "target_ema_decay": TARGET_EMA_DECAY,
            "consistency_target_params": True,
            "sample_newest_steps": True,
            "td_steps": TD_STEPS,
            "network.hidden_sizes": (128, 128),
            "network.observation_layer_norm": False,
            "network.observation_scale": OBSERVATION_SCALE,
        },
    )
    # The learning rate's cosine reaches 10% with the updates that 'run' gives the first half of
    # the run (those after warm-up) and stays there; a longer --total-env-steps keeps this number.
    first_half = override(
        preset, {"lr_decay_updates": "run", "total_env_steps": TOTAL_ENV_STEPS // 2}
    )
    return override(preset, {"lr_decay_updates": first_half.decay_updates})
