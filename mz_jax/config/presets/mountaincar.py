"""MountainCar-v0 (gymnax): drive an underpowered car up the right hill; -1 a step, 200 at most.

The ``acrobot`` preset's recipe with each action repeated for 4 environment steps (one push
changes the car's velocity too little for a search on a learned model to tell left from right),
longer exploratory repeats (μ 1.5), a constant ε, and 400k environment steps; no reward shaping.
Every seed measured ends past -120, most past Gymnasium's solved -110.

Tuning record: benchmarks/tuning/mountaincar.md. Results: benchmarks/RESULTS.md#mountaincar.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import acrobot

TOTAL_ENV_STEPS = 400_000
ACTION_REPEAT, UPDATES_PER_ITERATION = 4, 16


def config() -> TrainConfig:
    recipe = acrobot.config()
    decisions_per_iteration = recipe.num_envs * recipe.rollout_length
    return override(
        recipe,
        {
            "env": "gymnax:MountainCar-v0",
            "action_repeat": ACTION_REPEAT,
            "exploration_repeat_exponent": 1.5,
            "random_action_anneal": None,
            "total_env_steps": TOTAL_ENV_STEPS,
            "updates_per_iteration": UPDATES_PER_ITERATION,
            "lr_decay_updates": TOTAL_ENV_STEPS
            // (decisions_per_iteration * ACTION_REPEAT)
            * UPDATES_PER_ITERATION,
            "eval_max_steps": 200,
        },
    )
