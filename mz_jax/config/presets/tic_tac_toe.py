"""Tic-tac-toe (pgx): the two-player check, evaluated against a uniformly random player.

Rewards are +1/-1/0 at the end of the game, so the targets are Monte-Carlo returns (discount 1,
td_steps 9 reaches every game's end) and a small value support covers [-1, 1]. ``two_player`` of
the search is set from the environment. Three settings took it from 186 losses in 1,000 games
against the random player to none: ``random_action_probability`` 0.5 (without random moves
self-play settled on a few drawn lines, so positions a blunder creates never reached the replay),
``value_loss_weight`` 1.0, and the learning rate decayed over the run. A learning rate of 1e-3 over
400k steps rather than 3e-3 over 200k then removed the positions where an opponent could exploit it.

``python benchmarks/diagnostics/tic_tac_toe_exact.py <workdir>`` compares the agent's move in all 4,520
positions with the solved game: on seeds 10-15 no opponent can win a game against it in either
seat, and its move keeps the game's value in 4,492 to 4,507 of the 4,520 positions.

Every measurement behind these settings, and what was tried and not adopted:
benchmarks/tuning/tic_tac_toe.md.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig

NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 2, 4
TOTAL_ENV_STEPS = 400_000


def config() -> TrainConfig:
    return TrainConfig(
        env="pgx:tic_tac_toe",
        discount=1.0,
        td_steps=9,
        num_unroll_steps=5,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=128,
        total_env_steps=TOTAL_ENV_STEPS,
        # The defaults this preset was measured with (stored search values, priorities^1).
        priority_alpha=1.0,
        reanalyse_values=False,
        target_update_every=100,
        value_loss_weight=1.0,
        learning_rate=1e-3,  # decayed over the run (lr_decay_updates='run', the default)
        replay_capacity=100_000,
        # Measured with the L2 term in the loss (the default before decoupled weight decay).
        decoupled_weight_decay=False,
        eval_every_env_steps=10_000,
        eval_episodes=64,
        eval_max_steps=9,
        random_action_probability=0.5,
        search=SearchConfig(policy="gumbel", num_simulations=32),
        # The [3, 3, 2] board is small enough for an MLP, which trains much faster than a ResNet.
        network=NetworkConfig(
            kind="mlp",
            hidden_sizes=(128, 128),
            latent_size=64,
            value_support_size=3,
            reward_support_size=3,
        ),
    )
