"""A trained tic-tac-toe agent against the solved game: every position, and the random player exactly.

Tic-tac-toe has 4,520 positions with a move to make (5,478 legal positions, 958 of them final), few
enough to ask the trained agent (``mz_jax.Agent``: greedy search with the learned model) for its
move in every one of them and to compare each move with the game-theoretic value (negamax over the
whole tree). Because the agent's greedy move is a function of the position, its results against a
uniformly random player can then be computed exactly instead of sampled: the probability of a
win, a draw and a loss in each seat is a sum over the random player's moves, so "never loses
against the random player" is a statement about every game, not about a sample of 1,000.

    python benchmarks/diagnostics/tic_tac_toe_exact.py runs/ttt             # training workdirs, every seed
    python benchmarks/diagnostics/tic_tac_toe_exact.py runs/ttt --show 10   # and 10 losing moves it is led to

Columns: ``keeps value`` moves that keep the position's minimax value; ``win -> draw`` moves that
let a won position become a draw; ``-> loss`` moves after which the opponent can force a win from a
position that was not lost, by the seat of the player to move (X moves first). ``P(loss)`` is the
exact probability of losing against the uniformly random player with the agent moving first /
second; ``losses per 1,000`` is what ``mz-jax eval --episodes 1000 --opponent random`` expects (500
games in each seat). ``worst case`` is the agent's result, moving first / second, against an
opponent that knows its moves and replies best (W, D or L): a D or W in both seats means no opponent
can beat it, the MCTS baseline (``mz-jax eval --opponent mcts:N``) included; ``exploitable (X / O)``
counts the positions such an opponent can steer the agent into where its move loses a position it
could hold. A plain ``0`` is exactly zero; a rounded one is printed with its decimals.
The solver is :mod:`mz_jax.suite.tic_tac_toe_solver`.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

from common import machine_description, print_table

from mz_jax.run.agent import Agent
from mz_jax.run.resume import read_config
from mz_jax.suite.tic_tac_toe_solver import (
    CROSS,
    EMPTY,
    NOUGHT,
    agent_moves,
    exploitable_positions,
    outcome_probabilities,
    play,
    positions_to_move,
    to_move,
    value,
    worst_case,
)

RESULT = {1: "W", 0: "D", -1: "L"}


def exactly(p: Fraction, spec: str) -> str:
    """``p`` formatted, except that an exact 0 is written ``0`` (never a rounded-down 0.0000)."""
    return "0" if p == 0 else format(float(p), spec)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdirs", nargs="+", help="training run directories (pgx:tic_tac_toe)")
    parser.add_argument(
        "--show",
        type=int,
        default=0,
        help="print N of the losing moves an opponent can lead the agent to",
    )
    args = parser.parse_args(argv)

    print(machine_description())
    boards = positions_to_move()
    rows, examples = [], []
    runs = [
        (workdir, index)
        for workdir in args.workdirs
        for index in range(read_config(workdir).num_seeds)
    ]
    for workdir, index in runs:
        agent = Agent.restore(workdir, seed_index=index)
        if agent.config.env != "pgx:tic_tac_toe":
            raise SystemExit(f"{workdir}: trained on {agent.config.env}, not pgx:tic_tac_toe")
        moves = agent_moves(agent, boards)
        exploitable = [exploitable_positions(moves, seat) for seat in (CROSS, NOUGHT)]
        after = {b: -value(play(b, moves[b])) for b in boards}
        keeps = sum(after[b] == value(b) for b in boards)
        win_to_draw = sum(value(b) == 1 and after[b] == 0 for b in boards)
        into_loss = [b for b in boards if value(b) > -1 and after[b] == -1]
        to_loss = {seat: [b for b in into_loss if to_move(b) == seat] for seat in (CROSS, NOUGHT)}
        examples += [(workdir, b, moves[b]) for b in exploitable[0] + exploitable[1]]
        first, second = outcome_probabilities(moves, CROSS), outcome_probabilities(moves, NOUGHT)
        expected_losses = 500 * (first["loss"] + second["loss"])
        rows.append(
            [
                workdir,
                agent.config.seed,
                agent.env_steps,
                f"{keeps} / {len(boards)}",
                win_to_draw,
                f"{len(to_loss[CROSS])} / {len(to_loss[NOUGHT])}",
                f"{exactly(first['loss'], '.4f')} / {exactly(second['loss'], '.4f')}",
                exactly(expected_losses, ".2f"),
                f"{float(500 * (first['win'] + second['win'])):.0f}",
                " / ".join(RESULT[worst_case(moves, seat)] for seat in (CROSS, NOUGHT)),
                f"{len(exploitable[0])} / {len(exploitable[1])}",
            ]
        )
    print_table(
        [
            "workdir",
            "seed",
            "env steps",
            "keeps value",
            "win -> draw",
            "-> loss (X / O)",
            "P(loss) first / second",
            "losses per 1,000",
            "wins per 1,000",
            "worst case first / second",
            "exploitable (X / O)",
        ],
        rows,
    )
    marks = {EMPTY: ".", CROSS: "X", NOUGHT: "O"}
    for workdir, board, cell in examples[: args.show]:
        picture = " ".join(
            "".join("*" if 3 * r + c == cell else marks[board[3 * r + c]] for c in range(3))
            for r in range(3)
        )
        print(f"{workdir}: {marks[to_move(board)]} to move plays * : {picture}")


if __name__ == "__main__":
    main()
