"""Breakout-MinAtar (gymnax) sized for a CPU: an MLP on the flattened [10, 10, 4] frame.

For MinAtar on two CPU cores, where the ResNet of ``breakout_minatar`` is too slow: 1M environment
steps in under an hour a seed, with many updates per environment step, CartPole's value targets
(fresh values over 5 steps) and AdamW. On Breakout it ends about two thirds of the way from the
random policy to gymnax's PPO checkpoint; the ``minatar`` suite trains it on four games.

Tuning record: benchmarks/tuning/breakout_minatar_mlp.md. Results:
benchmarks/RESULTS.md#breakout_minatar_mlp (the suite: benchmarks/RESULTS.md#minatar_suite).
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override

NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 4, 4
TOTAL_ENV_STEPS = 1_000_000


def config() -> TrainConfig:
    return override(
        TrainConfig(),
        {
            "env": "gymnax:Breakout-MinAtar",
            "discount": 0.99,
            "num_envs": NUM_ENVS,
            "rollout_length": ROLLOUT_LENGTH,
            "updates_per_iteration": UPDATES_PER_ITERATION,
            "batch_size": 128,
            "total_env_steps": TOTAL_ENV_STEPS,
            "td_steps": 5,
            "reanalyse_values": True,
            "target_update_every": 1,
            "priority_alpha": 0.5,
            "value_loss_weight": 0.5,
            "lr_decay_updates": TOTAL_ENV_STEPS
            // (NUM_ENVS * ROLLOUT_LENGTH)
            * UPDATES_PER_ITERATION,
            "replay_capacity": 200_000,
            "decoupled_weight_decay": True,
            "eval_every_env_steps": 50_000,
            "eval_episodes": 16,
            "eval_max_steps": 2_000,
            "search.policy": "gumbel",
            "search.num_simulations": 16,
            "network.kind": "mlp",
            "network.hidden_sizes": (256, 256),
            "network.latent_size": 128,
        },
    )
