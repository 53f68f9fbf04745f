"""Connect four (pgx): the tic-tac-toe preset's recipe on a 6 x 7 board.

Monte-Carlo value targets (discount 1, ``td_steps`` 42), half of self-play's moves uniformly
random, a wider MLP (256 x 256), the reward term weighted 16 (a win is one transition in twenty)
and half of every batch mirrored left to right. It beats the random player but wins few games
against ``mcts:200`` (MCTS with random rollouts on the true game), short of both targets.

Tuning record: benchmarks/tuning/connect_four.md (the recipe's reasons:
benchmarks/tuning/tic_tac_toe.md). Results: benchmarks/RESULTS.md#connect_four.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import tic_tac_toe


def config() -> TrainConfig:
    return override(
        tic_tac_toe.config(),
        {
            "env": "pgx:connect_four",
            "td_steps": 42,
            "eval_max_steps": 42,
            "reward_loss_weight": 16.0,
            "augment_reflection": True,
            "network.hidden_sizes": (256, 256),
        },
    )
