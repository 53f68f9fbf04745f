"""Tic-tac-toe (pgx): the two-player check, evaluated against a uniformly random player.

Monte-Carlo value targets (discount 1, ``td_steps`` 9), half of self-play's moves uniformly random
(without them self-play settled on a few drawn lines), value loss weight 1, and a learning rate of
1e-3 decayed over 400k steps. No opponent can beat it in either seat, as
``benchmarks/diagnostics/tic_tac_toe_exact.py`` checks against the solved game.

Tuning record: benchmarks/tuning/tic_tac_toe.md. Results: benchmarks/RESULTS.md#tic_tac_toe.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override

NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 2, 4
TOTAL_ENV_STEPS = 400_000


def config() -> TrainConfig:
    return override(
        TrainConfig(),
        {
            "env": "pgx:tic_tac_toe",
            "discount": 1.0,
            "td_steps": 9,
            "num_unroll_steps": 5,
            "num_envs": NUM_ENVS,
            "rollout_length": ROLLOUT_LENGTH,
            "updates_per_iteration": UPDATES_PER_ITERATION,
            "batch_size": 128,
            "total_env_steps": TOTAL_ENV_STEPS,
            # The defaults this preset was measured with (stored search values, priorities^1).
            "priority_alpha": 1.0,
            "reanalyse_values": False,
            "target_update_every": 100,
            "value_loss_weight": 1.0,
            "learning_rate": 1e-3,  # decayed over the run (lr_decay_updates='run', the default)
            "replay_capacity": 100_000,
            # Measured with the L2 term in the loss (the default before decoupled weight decay).
            "decoupled_weight_decay": False,
            "eval_every_env_steps": 10_000,
            "eval_episodes": 64,
            "eval_max_steps": 9,
            "random_action_probability": 0.5,
            "search.policy": "gumbel",
            "search.num_simulations": 32,
            # The [3, 3, 2] board is small enough for an MLP, which trains much faster than a ResNet.
            "network.kind": "mlp",
            "network.hidden_sizes": (128, 128),
            "network.latent_size": 64,
            "network.value_support_size": 3,
            "network.reward_support_size": 3,
        },
    )
