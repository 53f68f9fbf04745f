"""An exact solver of tic-tac-toe that measures an agent's moves and results exactly.

Tic-tac-toe has 4,520 positions with a move to make (5,478 legal positions, 958 of them final), few
enough to solve the whole game (negamax over the tree, :func:`value`) and to ask an agent for its
move in every position (:func:`agent_moves`). Because an agent's greedy move is a function of the
position, its results against a uniformly random player are a finite sum over the random player's
moves: :func:`outcome_probabilities` gives them exactly, as fractions, instead of a sample. Against
an opponent that knows those moves, :func:`worst_case` gives the best it can force and
:func:`exploitable_positions` the agent's losing moves it can steer into: an agent with none cannot
lose a game to any opponent, the MCTS baseline included.
``benchmarks/diagnostics/tic_tac_toe_exact.py`` reports them for trained runs.

Boards are 9-tuples, row-major, of ``EMPTY`` / ``CROSS`` / ``NOUGHT``; the player to move follows
from the board (X moves first). Cells are numbered as pgx numbers its actions (a test checks
the observation and the numbering against pgx's game).
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import TYPE_CHECKING

import jax
import numpy as np

if TYPE_CHECKING:
    from mz_jax.run.agent import Agent

EMPTY, CROSS, NOUGHT = 0, 1, 2
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
Board = tuple[int, ...]


def to_move(board: Board) -> int:
    """The player to move: CROSS when both have as many marks, else NOUGHT."""
    return CROSS if board.count(CROSS) == board.count(NOUGHT) else NOUGHT


def play(board: Board, cell: int) -> Board:
    """The board after the player to move marks ``cell``."""
    return (*board[:cell], to_move(board), *board[cell + 1 :])


def winner(board: Board) -> int:
    """The player with three in a line, or EMPTY."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return EMPTY


def is_final(board: Board) -> bool:
    """Whether the game is over: a line is complete or the board is full."""
    return winner(board) != EMPTY or EMPTY not in board


def legal_moves(board: Board) -> list[int]:
    """The empty cells, in increasing order."""
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


def agent_moves(agent: Agent, boards: list[Board]) -> dict[Board, int]:
    """The agent's greedy move (:meth:`mz_jax.Agent.act`) in each of ``boards``."""
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


def worst_case(moves: dict[Board, int], agent: int) -> int:
    """The agent's result (seat ``agent``) against an opponent who knows ``moves`` and plays its
    best reply at every turn: +1 win, 0 draw, -1 loss. ``0`` or more: no opponent can beat it."""

    @functools.cache
    def result(board: Board) -> int:
        line = winner(board)
        if line != EMPTY:
            return 1 if line == agent else -1
        if EMPTY not in board:
            return 0
        if to_move(board) == agent:
            return result(play(board, moves[board]))
        return min(result(play(board, cell)) for cell in legal_moves(board))

    return result((EMPTY,) * 9)


def exploitable_positions(moves: dict[Board, int], agent: int) -> list[Board]:
    """The positions an opponent can steer the agent (seat ``agent``, playing ``moves``) into
    where the agent's move turns a position it could still hold (value 0 or 1) into a lost one.

    Reachable means: from the empty board, the agent plays its move and the opponent any legal move.
    Sorted by the number of marks on the board, then by the board."""
    seen: set[Board] = set()
    frontier = [(EMPTY,) * 9]
    while frontier:
        board = frontier.pop()
        if board in seen or is_final(board):
            continue
        seen.add(board)
        cells = [moves[board]] if to_move(board) == agent else legal_moves(board)
        frontier.extend(play(board, cell) for cell in cells)
    losing = [
        b for b in seen if to_move(b) == agent and value(b) > -1 and value(play(b, moves[b])) == 1
    ]
    return sorted(losing, key=lambda b: (9 - b.count(EMPTY), b))
