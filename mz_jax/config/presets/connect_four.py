"""Connect four (pgx): the tic-tac-toe preset's recipe on a 6 x 7 board.

Monte-Carlo value targets (discount 1, ``td_steps`` 42), half of self-play's moves uniformly
random, a wider MLP (256 x 256), the reward term weighted 16 (a win is one transition in twenty)
and half of every batch mirrored left to right. It beats the random player but wins few games
against ``mcts:200`` (MCTS with random rollouts on the true game), short of both targets.

Tuning record: benchmarks/tuning/connect_four.md (the recipe's reasons:
benchmarks/tuning/tic_tac_toe.md). Results: benchmarks/RESULTS.md#connect_four.
"""

import dataclasses
from pathlib import Path

from mz_jax import TrainConfig
from mz_jax.config.presets import load_preset


def config() -> TrainConfig:
    tic_tac_toe = load_preset(str(Path(__file__).with_name("tic_tac_toe.py")))
    return dataclasses.replace(
        tic_tac_toe,
        env="pgx:connect_four",
        td_steps=42,
        eval_max_steps=42,
        reward_loss_weight=16.0,
        augment_reflection=True,
        network=dataclasses.replace(tic_tac_toe.network, hidden_sizes=(256, 256)),
    )
