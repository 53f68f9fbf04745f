"""2048 (pgx) with Stochastic MuZero: after each move a tile (2 or 4) appears in an empty cell at
random, so the model has afterstates and C = 32 chance codes (16 cells x 2 tiles at most).

Settings: an MLP of 64 x 64 with a 64-wide latent state, supports of 60 and 50 for the values and
rewards (a move's reward is the sum of the tiles it merges, up to thousands over a game), Gumbel
search with chance nodes and 64 simulations (:mod:`mz_jax.mcts.chance_gumbel`; 64 rather than 16
lifted Stochastic MuZero; with pUCT it stayed near the random move's score), value targets over 10
steps, EfficientZero's consistency term with weight 2 and no commitment term
(docs/stochastic_muzero.md says why both), 300k environment steps (16 environments x 4 steps and 4
updates of batch 128 per iteration, 18,740 updates; at 100k steps it scored no better than MuZero,
and both score higher at 300k).

64 greedy games per seed from the final networks (``python benchmarks/diagnostics/game_2048.py --workdir RUN
--games 64``): over seeds 10-12, 20-22 and 30-32 Stochastic MuZero averages 2,413 and MuZero (the
same settings, no chance codes) 2,210, 9% ahead, short of the 20% target and well inside the
seeds' spread; the uniformly random legal move scores 1,092 on the same starting boards.

Every measurement behind these settings, and what was tried and not adopted:
benchmarks/tuning/game_2048.md.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig


def config() -> TrainConfig:
    return TrainConfig(
        env="pgx:2048",
        discount=0.99,
        num_envs=16,
        rollout_length=4,
        updates_per_iteration=4,
        batch_size=128,
        num_unroll_steps=5,
        td_steps=10,
        total_env_steps=300_000,
        replay_capacity=50_000,
        learning_rate=3e-3,
        consistency_loss_weight=2.0,
        commitment_loss_weight=0.0,
        eval_every_env_steps=25_000,
        eval_episodes=32,
        eval_max_steps=1_000,
        search=SearchConfig(policy="gumbel", num_simulations=64),
        network=NetworkConfig(
            kind="mlp",
            hidden_sizes=(64, 64),
            latent_size=64,
            value_support_size=60,
            reward_support_size=50,
            num_chance_outcomes=32,
        ),
    )
