"""Tic-tac-toe (pgx): the two-player check, evaluated against a uniformly random player.

Rewards are +1/-1/0 at the end of the game, so the targets are Monte-Carlo returns (discount 1,
td_steps 9 reaches every game's end) and a small value support covers [-1, 1]. ``two_player`` of
the search is set from the environment.

``random_action_probability`` 0.5 is what mattered: without it self-play settles on a few drawn
lines (consecutive games repeat the same moves), so positions a blunder creates never reach the
replay, and the model predicted a reward of 0.45, not 1, for an immediate win. Measured over 1,000
games against the random player (`mz-jax eval --episodes 1000`, 200k steps, 25k updates, about
four minutes on two CPU cores), wins / draws / losses (losses moving first + second):

* without random actions: 701 / 113 / 186 (31 + 155); 128 simulations at evaluation, or the muzero
  policy at temperature 1 throughout, gave the same;
* random actions with probability 0.25: 902 / 45 / 53 (0 + 53);
* with probability 0.5 (this preset): 949 / 33 / 18 (0 + 18);
* the same at 400k steps (`--total-env-steps 400000`, 12 minutes on busy cores): 946 / 49 / 5 (0 + 5).

A perfect player loses none: the target is not met yet.
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
