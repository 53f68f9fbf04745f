"""A trained tic-tac-toe agent against the solved game: every position, and the random player exactly.

Tic-tac-toe has 4,520 positions with a move to make (5,478 legal positions, 958 of them final), few
enough to ask the trained agent (``mz_jax.Agent``: greedy search with the learned model) for its
move in every one of them and to compare each move with the game-theoretic value (negamax over the
whole tree). Because the agent's greedy move is a function of the position, its results against a
uniformly random player can then be computed exactly instead of sampled: the probability of a
win, a draw and a loss in each seat is a sum over the random player's moves, so "never loses
against the random player" is a statement about every game, not about a sample of 1,000.

    python benchmarks/tic_tac_toe_exact.py runs/ttt                 # one or more training workdirs
    python benchmarks/tic_tac_toe_exact.py runs/ttt --show 10       # and the first 10 losing moves

Columns: ``keeps value`` moves that keep the position's minimax value; ``win -> draw`` moves that
let a won position become a draw; ``-> loss`` moves after which the opponent can force a win from a
position that was not lost, by the seat of the player to move (X moves first). ``P(loss)`` is the
exact probability of losing against the uniformly random player with the agent moving first /
second; ``losses per 1,000`` is what ``mz-jax eval --episodes 1000 --opponent random`` expects (500
games in each seat). A plain ``0`` is exactly zero; a rounded one is printed with its decimals.
"""

from __future__ import annotations

import argparse
import functools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.agent import Agent
from mz_jax.envs import make_env

EMPTY, CROSS, NOUGHT = 0, 1, 2
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
# 9 cells, row-major, EMPTY / CROSS / NOUGHT; the player to move follows from it.
Board = tuple[int, ...]


def to_move(board: Board) -> int:
    return CROSS if board.count(CROSS) == board.count(NOUGHT) else NOUGHT


def play(board: Board, cell: int) -> Board:
    return (*board[:cell], to_move(board), *board[cell + 1 :])


def winner(board: Board) -> int:
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return EMPTY


def is_final(board: Board) -> bool:
    return winner(board) != EMPTY or EMPTY not in board


def legal_moves(board: Board) -> list[int]:
    return [cell for cell in range(9) if board[cell] == EMPTY]


@functools.cache
def value(board: Board) -> int:
    """The game-theoretic value for the player to move: +1 win, 0 draw, -1 loss (negamax)."""
    if winner(board) != EMPTY:  # the player who just moved completed a line
        return -1
    if EMPTY not in board:
        return 0
    return max(-value(play(board, cell)) for cell in legal_moves(board))


def positions_to_move() -> list[Board]:
    """Every position reachable from the empty board that is not final, in a fixed order."""
    seen: dict[Board, None] = {}
    stack = [(EMPTY,) * 9]
    while stack:
        board = stack.pop()
        if board in seen or is_final(board):
            continue
        seen[board] = None
        stack.extend(play(board, cell) for cell in legal_moves(board))
    return sorted(seen)


def observation(board: Board) -> np.ndarray:
    """pgx's tic-tac-toe observation ``[3, 3, 2]``: the mover's marks, then the opponent's."""
    cells = np.array(board).reshape(3, 3)
    mover = to_move(board)
    return np.stack([cells == mover, cells == CROSS + NOUGHT - mover], axis=-1).astype(np.float32)


def check_encoding() -> None:
    """Plays a game in pgx and checks that :func:`observation` and the cell numbering match it."""
    env = make_env("pgx:tic_tac_toe")
    state, timestep = env.reset(jax.random.key(0))
    board: Board = (EMPTY,) * 9
    for cell in (4, 0, 2, 6, 3):  # no line is completed before the last move
        np.testing.assert_array_equal(np.asarray(timestep.observation), observation(board))
        np.testing.assert_array_equal(
            np.asarray(timestep.legal_action_mask), np.array(board) == EMPTY
        )
        state, timestep = env.step(jax.random.key(0), state, jnp.int32(cell))
        board = play(board, cell)


def agent_moves(agent: Agent, boards: list[Board]) -> dict[Board, int]:
    observations = np.stack([observation(board) for board in boards])
    legal = np.stack([np.array(board) == EMPTY for board in boards])
    actions = np.asarray(agent.act(jax.random.key(0), observations, legal))
    return dict(zip(boards, actions.tolist(), strict=True))


def outcome_probabilities(moves: dict[Board, int], agent: int) -> dict[str, Fraction]:
    """Exact win/draw/loss probabilities of the agent (seat ``agent``) against the random player."""

    @functools.cache
    def result(board: Board) -> dict[str, Fraction]:
        if winner(board) != EMPTY:
            return {
                "win": Fraction(winner(board) == agent),
                "loss": Fraction(winner(board) != agent),
            }
        if EMPTY not in board:
            return {"draw": Fraction(1)}
        if to_move(board) == agent:
            return result(play(board, moves[board]))
        total: dict[str, Fraction] = {}
        cells = legal_moves(board)
        for cell in cells:
            for outcome, p in result(play(board, cell)).items():
                total[outcome] = total.get(outcome, Fraction(0)) + p / len(cells)
        return total

    return {k: result((EMPTY,) * 9).get(k, Fraction(0)) for k in ("win", "draw", "loss")}


def exactly(p: Fraction, spec: str) -> str:
    """``p`` formatted, except that an exact 0 is written ``0`` (never a rounded-down 0.0000)."""
    return "0" if p == 0 else format(float(p), spec)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdirs", nargs="+", help="training run directories (pgx:tic_tac_toe)")
    parser.add_argument("--show", type=int, default=0, help="print the first N losing moves")
    args = parser.parse_args(argv)

    print(machine_description())
    check_encoding()
    boards = positions_to_move()
    rows, examples = [], []
    for workdir in args.workdirs:
        agent = Agent.restore(workdir)
        if agent.config.env != "pgx:tic_tac_toe":
            raise SystemExit(f"{workdir}: trained on {agent.config.env}, not pgx:tic_tac_toe")
        moves = agent_moves(agent, boards)
        after = {b: -value(play(b, moves[b])) for b in boards}
        keeps = sum(after[b] == value(b) for b in boards)
        win_to_draw = sum(value(b) == 1 and after[b] == 0 for b in boards)
        into_loss = [b for b in boards if value(b) > -1 and after[b] == -1]
        to_loss = {seat: [b for b in into_loss if to_move(b) == seat] for seat in (CROSS, NOUGHT)}
        examples += [(workdir, b, moves[b]) for b in to_loss[CROSS] + to_loss[NOUGHT]]
        first, second = outcome_probabilities(moves, CROSS), outcome_probabilities(moves, NOUGHT)
        expected_losses = 500 * (first["loss"] + second["loss"])
        rows.append(
            [
                workdir,
                agent.env_steps,
                f"{keeps} / {len(boards)}",
                win_to_draw,
                f"{len(to_loss[CROSS])} / {len(to_loss[NOUGHT])}",
                f"{exactly(first['loss'], '.4f')} / {exactly(second['loss'], '.4f')}",
                exactly(expected_losses, ".2f"),
                f"{float(500 * (first['win'] + second['win'])):.0f}",
            ]
        )
    print_table(
        [
            "workdir",
            "env steps",
            "keeps value",
            "win -> draw",
            "-> loss (X / O)",
            "P(loss) first / second",
            "losses per 1,000",
            "wins per 1,000",
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
