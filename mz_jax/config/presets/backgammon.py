"""Backgammon (pgx) with Stochastic MuZero: the dice are the chance events, one move per die, so the
same player often moves twice in a row (the turn head tells the search who moves next).

For chance outside the agent's control in a two-player game: an MLP with C = 32 chance codes,
Gumbel search with chance nodes, value targets over 10 steps at discount 1 with the value terms
weighted 2, and 1M environment steps. It wins most games against the uniformly random player,
short of the target of 90%.

Tuning record: benchmarks/tuning/backgammon.md (Stochastic MuZero's experiment log:
benchmarks/tuning/stochastic_muzero.md). Results: benchmarks/RESULTS.md#backgammon.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override
from mz_jax.config.presets import game_2048


def config() -> TrainConfig:
    # The game_2048 recipe (Stochastic MuZero, C = 32, Gumbel search), for a game scored +-1, 2 or
    # 3 at its end: longer, 16 simulations, without the consistency term.
    return override(
        game_2048.config(),
        {
            "env": "pgx:backgammon",
            "discount": 1.0,
            "total_env_steps": 1_000_000,
            "consistency_loss_weight": 0.0,
            "eval_every_env_steps": 50_000,
            "search.num_simulations": 16,
            "network.hidden_sizes": (128, 128),
            "network.value_support_size": 3,
            "network.reward_support_size": 3,
            "value_loss_weight": 2.0,
        },
    )
