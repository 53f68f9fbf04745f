"""A rating ladder over a training run's kept checkpoints: who beats whom, on one Elo scale.

::

    ladder = run_ladder("runs/tic_tac_toe", players=("random", "mcts:50"), games=32)
    print(ladder.table())
    plot_ladder(ladder, "runs/tic_tac_toe/ladder.png")

In a two-player game every kept checkpoint (its greedy search with its own parameters, named
``"step:<S>"``) and the named baseline players (``"random"``, ``"mcts:N"``:
:mod:`mz_jax.mcts.baseline`) meet in a round robin of ``games`` games a pair, each moving first in
half of them (:func:`play_match`); the results are fitted with the Bradley–Terry model (Bradley &
Terry, 1952) on Elo's scale (Elo, 1978) by :func:`elo_ratings`. In a single-player environment a
checkpoint's entry is its mean greedy return instead.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from mz_jax.envs import Env
from mz_jax.mcts import baseline
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run.agent import Agent, open_read_only, restore_run_state
from mz_jax.run.resume import read_config
from mz_jax.show.elo import elo_ratings
from mz_jax.show.match import (
    Mover,
    agent_mover,
    baseline_mover,
    check_games,
    check_max_steps,
    check_opening_moves,
    compile_match,
    scores_of,
)
from mz_jax.training import evaluate as evaluate_lib
from mz_jax.training.build import build
from mz_jax.types import Array

ELO = "elo"
RETURN = "return"
STEP_PREFIX = "step:"
"""Checkpoint ``S`` of the run is the player ``"step:S"``."""


class PairResult(NamedTuple):
    """A pair's games in the round robin, counted for ``player_a`` (its wins are b's losses).

    Attributes:
      player_a: one player's name.
      player_b: the other's.
      wins: games a won.
      draws: games drawn, the unfinished ones included.
      losses: games a lost.
      unfinished: games that had not ended within the step limit (counted as draws).
    """

    player_a: str
    player_b: str
    wins: int
    draws: int
    losses: int
    unfinished: int


class Ladder(NamedTuple):
    """A run's checkpoints (and baselines) rated against each other, or their greedy returns.

    Attributes:
      env: the environment's name.
      kind: ``"elo"`` (two-player: Elo ratings, ``"random"`` = 0 where it played) or ``"return"``
        (single-player: the mean greedy return over ``games_per_pair`` episodes).
      players: names, the checkpoints ``"step:<S>"`` oldest first, then the baselines.
      env_steps: each player's environment steps of training (None for a baseline).
      ratings: each player's Elo rating, or mean greedy return.
      games_per_pair: games each pair played (episodes per checkpoint for ``"return"``).
      pairs: the round robin's results (empty for ``"return"``).
      opening_moves: the random moves that opened each game (0 for ``"return"``).
    """

    env: str
    kind: str
    players: tuple[str, ...]
    env_steps: tuple[int | None, ...]
    ratings: tuple[float, ...]
    games_per_pair: int
    pairs: tuple[PairResult, ...] = ()
    opening_moves: int = 0

    def record(self, player: str) -> tuple[int, int, int]:
        """``(wins, draws, losses)`` of ``player`` over all its games."""
        wins = draws = losses = 0
        for pair in self.pairs:
            if player == pair.player_a:
                wins, draws, losses = wins + pair.wins, draws + pair.draws, losses + pair.losses
            elif player == pair.player_b:
                wins, draws, losses = wins + pair.losses, draws + pair.draws, losses + pair.wins
        return wins, draws, losses

    def table(self) -> str:
        """The ladder as text: one row a player, best first, with its rank, training env steps,
        rating (or return) and, for ``"elo"``, its wins, draws and losses over all its games."""
        value = "Elo" if self.kind == ELO else "return"
        header = f"{'#':>3}  {'player':<14} {'env steps':>12} {value:>9}"
        if self.kind == ELO:
            header += f" {'W':>5} {'D':>5} {'L':>5}"
        rows = [header]
        order = sorted(range(len(self.players)), key=lambda i: -self.ratings[i])
        for rank, i in enumerate(order, 1):
            steps = "-" if self.env_steps[i] is None else f"{self.env_steps[i]:,}"
            rating = f"{self.ratings[i]:.1f}" if self.kind == ELO else f"{self.ratings[i]:.4g}"
            row = f"{rank:>3}  {self.players[i]:<14} {steps:>12} {rating:>9}"
            if self.kind == ELO:
                row += " {:>5} {:>5} {:>5}".format(*self.record(self.players[i]))
            rows.append(row)
        return "\n".join(rows)

    def to_dict(self) -> dict:
        """The ladder as JSON-ready data: ``env``, ``kind``, ``games_per_pair``, ``opening_moves``,
        ``players`` (one entry a player: ``name``, ``env_steps``, ``rating``; ``wins``, ``draws``,
        ``losses`` for ``"elo"``) and ``pairs`` (:class:`PairResult` fields)."""
        players = []
        for name, steps, rating in zip(self.players, self.env_steps, self.ratings, strict=True):
            entry = {"name": name, "env_steps": steps, "rating": rating}
            if self.kind == ELO:
                entry.update(zip(("wins", "draws", "losses"), self.record(name), strict=True))
            players.append(entry)
        return {
            "env": self.env,
            "kind": self.kind,
            "games_per_pair": self.games_per_pair,
            "opening_moves": self.opening_moves,
            "players": players,
            "pairs": [pair._asdict() for pair in self.pairs],
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def kept_steps(workdir: str | Path) -> list[int]:
    """The steps of the complete checkpoints kept in ``workdir``, oldest first (reads only)."""
    checkpointer = open_read_only(workdir)
    try:
        return checkpointer.steps()
    finally:
        checkpointer.close()


def _restore_agents(
    workdir: Path, config: Any, seed_index: int, progress: Callable[[str], Any]
) -> list[Agent]:
    """The agent of every kept checkpoint that restores, oldest first; one that fails (a running
    training removed it, say) is reported through ``progress`` and skipped."""
    if not (workdir / checkpoint_lib.CHECKPOINT_DIR).is_dir() or not (steps := kept_steps(workdir)):
        raise FileNotFoundError(f"{str(workdir)!r} has no checkpoint yet")
    agents = []
    for step in steps:
        try:
            agents.append(restore_run_state(workdir, step=step, config=config).agent(seed_index))
        except checkpoint_lib.CheckpointError as error:
            progress(f"checkpoint {step} skipped: {error}")
    if not agents:
        raise checkpoint_lib.CheckpointError(f"no checkpoint of {str(workdir)!r} restores")
    return agents


def _return_ladder(
    agents: list[Agent], key: Array, *, games: int, max_steps: int, progress: Callable
) -> Ladder:
    """Each checkpoint's mean greedy return over ``games`` episodes (the i-th with key
    ``fold_in(key, i)``), one compiled evaluation for all of them."""
    first = agents[0]
    evaluate = jax.jit(
        functools.partial(
            evaluate_lib.evaluate,
            env=first.env,
            network=first.network,
            search_config=first.search_config,
            num_episodes=games,
            max_steps=first.config.decisions(max_steps),
        )
    )
    returns = []
    for i, agent in enumerate(agents):
        result = evaluate(agent.params, jax.random.fold_in(key, i))
        returns.append(float(np.mean(jax.device_get(result.episode_return))))
        progress(f"{STEP_PREFIX}{agent.checkpoint_step}: mean greedy return {returns[-1]:.4g}")
    return Ladder(
        env=first.env.name,
        kind=RETURN,
        players=tuple(f"{STEP_PREFIX}{agent.checkpoint_step}" for agent in agents),
        env_steps=tuple(agent.env_steps for agent in agents),
        ratings=tuple(returns),
        games_per_pair=games,
    )


def _round_robin(
    movers: dict[str, Mover],
    env: Env,
    key: Array,
    *,
    games: int,
    max_steps: int,
    opening_moves: int,
    progress: Callable[[str], Any],
) -> list[PairResult]:
    """Every pair of ``movers`` (in their order) plays ``games`` games, the k-th pair with key
    ``fold_in(key, k)``; one compiled program for each pair of kinds."""
    names, programs, pairs = list(movers), {}, []
    for k, (a, b) in enumerate((a, b) for i, a in enumerate(names) for b in names[i + 1 :]):
        mover_a, mover_b = movers[a], movers[b]
        kinds = (mover_a.kind, mover_b.kind)
        if kinds not in programs:
            programs[kinds] = compile_match(
                env,
                mover_a,
                mover_b,
                num_games=games,
                max_steps=max_steps,
                opening_moves=opening_moves,
            )
        ret, ended = jax.device_get(
            programs[kinds](mover_a.params, mover_b.params, jax.random.fold_in(key, k))
        )
        scores = scores_of(ret, ended)
        unfinished = int(np.sum(~np.asarray(ended)))
        pair = PairResult(
            a, b, int(np.sum(scores > 0)), int(np.sum(scores == 0)), int(np.sum(scores < 0)),
            unfinished,
        )  # fmt: skip
        pairs.append(pair)
        note = f" ({unfinished} unfinished, counted as draws)" if unfinished else ""
        progress(f"{a} vs {b}: {pair.wins} W {pair.draws} D {pair.losses} L{note}")
    return pairs


def run_ladder(
    workdir: str | Path,
    *,
    players: Sequence[str] | None = None,
    games: int = 32,
    key: Array | None = None,
    max_steps: int | None = None,
    opening_moves: int = 2,
    seed_index: int = 0,
    progress: Callable[[str], Any] = print,
) -> Ladder:
    """The ladder of a training run: every kept checkpoint, and the baselines ``players``.

    Two-player games: a round robin of every pair among the checkpoints (``"step:<S>"``, oldest
    first) and the baselines, ``games`` games a pair with each moving first in half
    (:func:`play_match`; the k-th pair in that order plays with key ``fold_in(key, k)``), rated
    by :func:`elo_ratings`. Single-player environments: the mean greedy return of each checkpoint
    over ``games`` episodes (the i-th checkpoint's with key ``fold_in(key, i)``, as
    ``Agent.evaluate`` plays them).

    Args:
      workdir: the training run's directory; nothing in it is written.
      players: baseline players, ``"random"`` or ``"mcts:N"`` (pgx games); None: ``("random",)``
        in a two-player game, none in a single-player one, where no baseline can play.
      games: games each pair plays, an even integer >= 2 (single-player: episodes, >= 1).
      key: a PRNG key, consumed; default ``jax.random.key(0)``.
      max_steps: moves a game or episode may last; default the run's ``eval_max_steps``. A game
        that has not ended by then is a draw.
      opening_moves: two-player games: uniformly random moves that open each game (see
        :func:`~mz_jax.show.match.play_match`), so that greedy agents, which are deterministic,
        meet in varied positions rather than replay one game a seat.
      seed_index: which run of a multi-seed run.
      progress: called with one line per pair (or checkpoint) once it is played.

    Raises:
      FileNotFoundError: ``workdir`` is not a run's directory, or has no checkpoint.
      ValueError: a bad ``games`` or ``max_steps``, an unknown or repeated player, or one that
        cannot play this environment (:func:`mz_jax.mcts.baseline.check_opponent_env`; any
        baseline in a single-player environment).
    """
    workdir = Path(workdir)
    config = read_config(workdir)
    env = build(config).env  # compiles nothing: to check the arguments before restoring
    two_player = env.num_players == 2
    players = tuple(("random",) if two_player else ()) if players is None else tuple(players)
    if two_player:
        check_games(games)
    elif isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games {games!r} is invalid: allowed an integer >= 1")
    max_steps = config.eval_max_steps if max_steps is None else max_steps
    check_max_steps(max_steps)
    check_opening_moves(opening_moves)
    for name in players:
        baseline.check_opponent_env(env, name, field="players")
    if len(set(players)) != len(players):
        raise ValueError(f"players {list(players)!r} are invalid: allowed distinct names")
    key = jax.random.key(0) if key is None else key
    agents = _restore_agents(workdir, config, seed_index, progress)
    if not two_player:
        return _return_ladder(agents, key, games=games, max_steps=max_steps, progress=progress)
    # One network and search for every checkpoint (one config): one program per pair of kinds.
    first, env = agents[0], agents[0].env
    movers = {
        f"{STEP_PREFIX}{agent.checkpoint_step}": agent_mover(
            first.network, first.search_config, agent.params
        )
        for agent in agents
    }
    movers.update((name, baseline_mover(env, name)) for name in players)
    pairs = _round_robin(
        movers,
        env,
        key,
        games=games,
        max_steps=max_steps,
        opening_moves=opening_moves,
        progress=progress,
    )
    scores = {
        (p.player_a, p.player_b): np.repeat([1, 0, -1], [p.wins, p.draws, p.losses]) for p in pairs
    }
    ratings = elo_ratings(list(movers), scores)
    return Ladder(
        env=env.name,
        kind=ELO,
        players=tuple(movers),
        env_steps=tuple(agent.env_steps for agent in agents) + (None,) * len(players),
        ratings=tuple(ratings[name] for name in movers),
        games_per_pair=games,
        pairs=tuple(pairs),
        opening_moves=opening_moves,
    )


def plot_ladder(ladder: Ladder, path: str | Path) -> None:
    """Saves a PNG of the ladder: each checkpoint's rating (or return) against its training
    environment steps, the baselines as labelled horizontal lines."""
    from matplotlib.figure import Figure

    from mz_jax.run.plots import STEPS_LABEL

    fig = Figure(figsize=(6, 4), dpi=120)
    ax = fig.subplots()
    checkpoints = [i for i, steps in enumerate(ladder.env_steps) if steps is not None]
    ax.plot(
        [ladder.env_steps[i] for i in checkpoints],
        [ladder.ratings[i] for i in checkpoints],
        color="tab:blue",
        marker="o",
        label="checkpoints",
    )
    colors = ("tab:gray", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
    baselines = [i for i, steps in enumerate(ladder.env_steps) if steps is None]
    for n, i in enumerate(baselines):
        ax.axhline(
            ladder.ratings[i],
            color=colors[n % len(colors)],
            linestyle="--",
            linewidth=1,
            label=ladder.players[i],
        )
    if ladder.kind == ELO:
        anchor = "random" if "random" in ladder.players else "mean"
        ylabel, games = f"Elo rating ({anchor} = 0)", "games a pair"
        if ladder.opening_moves:
            games += f", {ladder.opening_moves} random opening moves"
    else:
        ylabel, games = "mean greedy return", "episodes a checkpoint"
    ax.set_title(f"{ladder.env}: {ladder.games_per_pair} {games}", fontsize=9)
    ax.set_xlabel(STEPS_LABEL)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
