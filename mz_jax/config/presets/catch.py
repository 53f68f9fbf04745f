"""Catch (bsuite, via gymnax): the fastest end-to-end check that MuZero learns.

A high replay ratio (one update of 128 sequences per 2 environment steps) and Monte-Carlo value
targets; the agent learns to catch every ball within the preset's 20,000 environment steps.

Tuning record: benchmarks/tuning/catch.md. Results: benchmarks/RESULTS.md#catch.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override


def config() -> TrainConfig:
    return override(
        TrainConfig(),
        {
            "env": "gymnax:Catch-bsuite",
            "discount": 0.97,
            "num_envs": 8,
            "rollout_length": 2,
            "updates_per_iteration": 8,
            "batch_size": 128,
            "num_unroll_steps": 5,
            "td_steps": 10,  # an episode lasts 9 steps: Monte-Carlo targets
            "total_env_steps": 20_000,
            "replay_capacity": 20_000,
            # Measured with the L2 term in the loss (the default before decoupled weight decay).
            "decoupled_weight_decay": False,
            "warmup_updates": 50,
            "eval_every_env_steps": 2_000,
            "eval_episodes": 32,
            "eval_max_steps": 20,
            # The defaults this preset was measured with (stored search values, priorities^1).
            "priority_alpha": 1.0,
            "reanalyse_values": False,
            "target_update_every": 100,
            "learning_rate": 3e-3,
            "lr_decay_updates": None,
            "search.policy": "gumbel",
            "search.num_simulations": 8,
            "network.kind": "mlp",
            "network.hidden_sizes": (32,),
            "network.latent_size": 32,
            "network.value_support_size": 3,  # returns in [-1, 1]
            "network.reward_support_size": 3,
        },
    )
