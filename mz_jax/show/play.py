"""A person plays a pgx board game against a trained agent in the terminal.

::

    agent = mz_jax.run.agent.Agent.restore("runs/tic_tac_toe")
    result = play_in_terminal(agent)                 # +1 the person won, 0 draw, -1 lost

Boards are drawn as text, ``X`` for the stones of the player who moved first and ``O`` for the
other's, ``.`` for an empty point, with the coordinates a person types: a cell is its column letter
and its row number counted from the top (``b2``, the centre of tic-tac-toe, is action 4), a
connect-four move is its column letter (``d``, action 3), and any move may be typed as its action
index; ``pass`` passes where the game has a pass action (othello, go).
"""

from __future__ import annotations

import re
import string
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.show.episode import jitted_pgx_game
from mz_jax.types import Array

EMPTY, FIRST, SECOND = -1, 0, 1
SYMBOLS = {EMPTY: ".", FIRST: "X", SECOND: "O"}
MAX_LISTED = 12
"""At most this many legal moves are named in an answer to a wrong move."""
QUIT = frozenset({"q", "quit", "exit"})


class GameAbandoned(Exception):
    """The person ended the game before its end: end of input, or ``q``."""


class _Layout(NamedTuple):
    """How one game's pgx state is drawn and its moves are named.

    Attributes:
      rows: the board's rows.
      columns: the board's columns.
      stones: ``stones(state) -> [rows * columns]`` int, row by row from the top: ``FIRST`` for
        a stone of the player who moved first, ``SECOND`` for the other's, ``EMPTY``.
      colour_to_move: ``colour_to_move(state) -> FIRST | SECOND``, whose turn it is.
      by_column: a move names a column (connect four), not a cell.
      pass_action: the action index of passing, or None where the game cannot pass.
    """

    rows: int
    columns: int
    stones: Callable[[Any], np.ndarray]
    colour_to_move: Callable[[Any], int]
    by_column: bool = False
    pass_action: int | None = None


def _colour_board(state) -> np.ndarray:
    # tic-tac-toe and connect four keep -1 (empty), 0 (first mover's, X), 1 (the other's).
    return np.asarray(state._x.board)


def _signed_board(board: np.ndarray) -> np.ndarray:
    """A board of signs (> 0 the first mover's stones, < 0 the other's) as colours."""
    return np.where(board > 0, FIRST, np.where(board < 0, SECOND, EMPTY))


def _othello_stones(state) -> np.ndarray:
    # pgx keeps the board of the player to move (> 0 theirs); turn 0 is the first mover's.
    board = np.asarray(state._x.board)
    return _signed_board(board if int(state._x.turn) == 0 else -board)


def _go_stones(state) -> np.ndarray:
    # pgx keeps black (the first mover) > 0, white < 0 (the ids of the stones' chains).
    return _signed_board(np.asarray(state._x.board))


LAYOUTS: dict[str, _Layout] = {
    "pgx:tic_tac_toe": _Layout(3, 3, _colour_board, lambda s: int(s._x.color)),
    "pgx:connect_four": _Layout(6, 7, _colour_board, lambda s: int(s._x.color), by_column=True),
    "pgx:othello": _Layout(8, 8, _othello_stones, lambda s: int(s._x.turn), pass_action=64),
    "pgx:go_9x9": _Layout(9, 9, _go_stones, lambda s: int(s._x.color), pass_action=81),
}

SUPPORTED_GAMES: tuple[str, ...] = tuple(LAYOUTS)
"""The environments a person can play in the terminal."""


def _layout(env_name: str) -> _Layout:
    if env_name not in LAYOUTS:
        raise ValueError(
            f"{env_name!r} cannot be played in the terminal; supported: {', '.join(SUPPORTED_GAMES)}"
        )
    return LAYOUTS[env_name]


def _colour_of(layout: _Layout, state, player: int) -> int:
    """The colour (``FIRST`` or ``SECOND``) of pgx player id ``player`` in ``state``."""
    to_move = layout.colour_to_move(state)
    return to_move if player == int(state.current_player) else 1 - to_move


def board_text(env_name: str, backend_state, *, person: int | None = None) -> str:
    """The board of a pgx state (unbatched, ``EnvState.backend``) as text lines.

    Column letters above the board, and row numbers counted from the top at its left where a move
    names a cell; ``X`` the first mover's stones, ``O`` the other's, ``.`` empty. With ``person``
    (the pgx player id the person plays), a last line says which symbol is whose.

    Raises:
      ValueError: for an environment not in :data:`SUPPORTED_GAMES`.
    """
    layout = _layout(env_name)
    stones = layout.stones(backend_state).reshape(layout.rows, layout.columns)
    letters = " ".join(string.ascii_lowercase[: layout.columns])
    margin = "" if layout.by_column else " " * (len(str(layout.rows)) + 1)
    lines = [margin + letters]
    for row, cells in enumerate(stones):
        label = "" if layout.by_column else f"{row + 1:>{len(margin) - 1}} "
        lines.append(label + " ".join(SYMBOLS[int(cell)] for cell in cells))
    if person is not None:
        colour = _colour_of(layout, backend_state, person)
        lines.append(f"{SYMBOLS[colour]} you, {SYMBOLS[1 - colour]} agent")
    return "\n".join(lines)


def _move_name(layout: _Layout, action: int) -> str:
    """The coordinates of ``action``: ``"b2"``, a column letter, or ``"pass"``."""
    if action == layout.pass_action:
        return "pass"
    if layout.by_column:
        return string.ascii_lowercase[action]
    row, column = divmod(action, layout.columns)
    return f"{string.ascii_lowercase[column]}{row + 1}"


def move_name(env_name: str, action: int) -> str:
    """The coordinates a person types for ``action`` in ``env_name``: ``"b2"``, a column letter,
    or ``"pass"``.

    Raises:
      ValueError: for an environment not in :data:`SUPPORTED_GAMES`.
    """
    return _move_name(_layout(env_name), action)


def _legal_names(layout: _Layout, legal: np.ndarray) -> str:
    """The legal moves' names, the first ``MAX_LISTED`` of them where there are more."""
    actions = np.flatnonzero(legal)
    names = " ".join(_move_name(layout, int(a)) for a in actions[:MAX_LISTED])
    if actions.size > MAX_LISTED:
        names += f" and {actions.size - MAX_LISTED} more"
    return names or "none"


def _how_to_type(layout: _Layout, num_actions: int) -> str:
    example = "a column letter such as d" if layout.by_column else "a cell such as b2"
    passing = " or pass" if layout.pass_action is not None else ""
    return f"type {example}{passing} or an index 0-{num_actions - 1}"


def _action_of(layout: _Layout, text: str, num_actions: int) -> int | None:
    """The action ``text`` names, or None where it names none on the board."""
    if text.isdigit():
        action = int(text)
        return action if action < num_actions else None
    if text == "pass":
        return layout.pass_action
    letters = string.ascii_lowercase[: layout.columns]
    if layout.by_column:
        return letters.index(text) if len(text) == 1 and text in letters else None
    cell = re.fullmatch(r"([a-z])(\d+)", text)
    if cell is None or cell[1] not in letters or not 1 <= int(cell[2]) <= layout.rows:
        return None
    return (int(cell[2]) - 1) * layout.columns + letters.index(cell[1])


def parse_move(env_name: str, text: str, legal_action_mask) -> int:
    """The action a person typed: an action index (``"4"``), a cell (``"b2"``: column letter,
    row number from the top), a column letter (connect four) or ``"pass"`` (othello, go).

    Args:
      env_name: one of :data:`SUPPORTED_GAMES`.
      text: what the person typed (case and surrounding spaces do not matter).
      legal_action_mask: ``[A]`` bool, True where an action is legal now.

    Raises:
      ValueError: one line saying what was wrong and what is allowed, for text that names no
        move, a move off the board, or a move that is not legal now.
    """
    layout = _layout(env_name)
    legal = np.asarray(legal_action_mask, bool).reshape(-1)
    legal_names = _legal_names(layout, legal)
    typed = text.strip()
    action = _action_of(layout, typed.lower(), legal.size)
    if action is None:
        raise ValueError(
            f"{typed!r} is not a move: {_how_to_type(layout, legal.size)}; legal now: {legal_names}"
        )
    if not legal[action]:
        name = _move_name(layout, action)
        named = "" if name == typed.lower() else f" ({name})"
        raise ValueError(f"{typed!r}{named} is not legal now; legal now: {legal_names}")
    return action


def _read_move(layout: _Layout, env_name: str, state, stdin: TextIO, stdout: TextIO) -> int:
    """The person's next legal move, asked again after each wrong one; ``GameAbandoned`` at the
    end of input or ``q``."""
    while True:
        stdout.write("your move: ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            stdout.write("\n")
            raise GameAbandoned("end of input")
        if line.strip().lower() in QUIT:
            raise GameAbandoned("the person quit")
        try:
            return parse_move(env_name, line, state.legal_action_mask)
        except ValueError as error:
            print(error, file=stdout)


def _result_line(result: int) -> str:
    return {1: "You win.", 0: "Draw.", -1: "The agent wins."}[result]


def play_in_terminal(
    agent,
    *,
    agent_first: bool = False,
    key: Array | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Plays one game, the person against ``agent``, reading moves from ``stdin``.

    The board is drawn before each of the person's moves; a wrong move is answered in one line
    and asked again; the agent's moves and the result are printed. The person moves first unless
    ``agent_first``.

    Args:
      agent: a :class:`mz_jax.run.agent.Agent` of one of :data:`SUPPORTED_GAMES` (anything with
        ``env.name`` and ``act(key, observation [1, ...], legal_action_mask [1, A]) -> [1]``).
      agent_first: the agent makes the first move.
      key: a PRNG key, consumed; default ``jax.random.key(0)``.
      stdin: where the person's moves are read, one a line; default ``sys.stdin`` (at the call).
      stdout: where the board, the moves and the result are written; default ``sys.stdout``.

    Returns:
      The result for the person: +1 a win, 0 a draw, -1 a loss.

    Raises:
      ValueError: (one line) if ``agent.env.name`` is not in :data:`SUPPORTED_GAMES`.
      GameAbandoned: if the input ends or the person types ``q`` before the game ends.
    """
    env_name = agent.env.name
    layout = _layout(env_name)
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    init, step = jitted_pgx_game(env_name)
    key = jax.random.key(0) if key is None else key
    key, init_key = jax.random.split(key)
    state = init(init_key)
    first = int(state.current_player)
    person = 1 - first if agent_first else first
    num_actions = int(state.legal_action_mask.shape[-1])
    symbol = SYMBOLS[_colour_of(layout, state, person)]
    order = "second" if agent_first else "first"
    print(
        f"You play {symbol} and move {order}; {_how_to_type(layout, num_actions)}, q to quit.",
        file=stdout,
    )
    while not bool(state.terminated | state.truncated):
        if int(state.current_player) == person:
            print(board_text(env_name, state, person=person), file=stdout)
            action = _read_move(layout, env_name, state, stdin, stdout)
        else:
            key, act_key = jax.random.split(key)
            observation = jnp.asarray(state.observation, jnp.float32)[None]
            action = int(agent.act(act_key, observation, state.legal_action_mask[None])[0])
            print(f"agent plays {_move_name(layout, action)} ({action})", file=stdout)
        key, step_key = jax.random.split(key)
        state = step(state, jnp.int32(action), step_key)
    print(board_text(env_name, state, person=person), file=stdout)
    result = int(np.sign(float(state.rewards[person])))
    print(_result_line(result), file=stdout)
    return result
