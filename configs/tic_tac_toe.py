"""Tic-tac-toe (pgx): the two-player check, evaluated against a uniformly random player.

Rewards are +1/-1/0 at the end of the game, so the targets are Monte-Carlo returns (discount 1,
td_steps 9 reaches every game's end) and a small value support covers [-1, 1]. ``two_player`` of
the search is set from the environment.

Not yet good enough: the full 200k-step run (25k updates, five minutes on two CPU cores) won 70%,
drew 11% and lost 19% of 1,000 games against the random player (31 losses moving first, 155 moving
second; `mz-jax eval --episodes 1000`), where a perfect player loses none; a 100k-step run had lost
10% of 200. Neither 128 simulations at evaluation (either policy) nor training with the muzero policy
at temperature 1 throughout changed the losses. What we saw: self-play settles on a few drawn lines
(consecutive games repeat the same moves), and the model predicts a reward of 0.45, not 1, for an
immediate win, so positions that a random opponent creates are poorly learned.
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig


def config() -> TrainConfig:
    return TrainConfig(
        env="pgx:tic_tac_toe",
        discount=1.0,
        td_steps=9,
        num_unroll_steps=5,
        num_envs=16,
        rollout_length=2,
        updates_per_iteration=4,
        batch_size=128,
        total_env_steps=200_000,
        replay_capacity=100_000,
        eval_every_env_steps=10_000,
        eval_episodes=64,
        eval_max_steps=9,
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
