r"""One GPU lease for the board and chance games: connect four, backgammon and 2048 trained with
their GPU presets, resumed across calls, then the evaluations a reader can trust.

    python benchmarks/games/lease.py --smoke                 # tiny sizes, every game, on a CPU: CI's check
    python benchmarks/games/lease.py --print-setup           # the set-up and lease commands, with versions
    python benchmarks/games/lease.py --games connect_four    # some games (always in the order below)

A lease: the set-up is ``benchmarks/gpu.py``'s (the same wheels in ``.whl/``; ``--print-setup``
prints both commands); then, in each device call on the warm machine, carrying ``.whl``, with
``timeout_s`` 600::

    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site \
        .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD && \
    timeout -s INT 560 python3 benchmarks/games/lease.py --workdir /tmp/games --out-dir $OUT

The same command in the next call resumes: the training runs continue from their checkpoints in
``--workdir`` (on the machine, not brought back: they hold the replay) and the evaluations already
played are kept in ``WORKDIR/<game>/evaluations.json``.

What runs, game by game (:data:`GAMES`), each run ``mz-jax train --config PRESET --num-seeds S``
in a child process, one after the other:

* **connect_four**: ``connect_four_gpu`` (the spatial ResNet in bfloat16), 2 seeds; then each seed
  plays 200 games against ``random``, ``mcts:200`` and ``mcts:1000`` (MCTS with random rollouts
  on the true game, :mod:`mz_jax.mcts.baseline`), half of them moving first. Target: 90% won
  against ``mcts:200`` in each seat and 99% against ``random``.
* **backgammon**: ``backgammon_gpu`` (Stochastic MuZero), 4 seeds; 200 games a seed against
  ``random`` and ``pip_count`` (:mod:`mz_jax.envs.backgammon`). Target: 90% won against ``random``.
* **2048**: ``game_2048_gpu`` (Stochastic MuZero) and MuZero (the same preset with
  ``network.num_chance_outcomes = None``), 5 seeds each; 64 greedy games a seed. Target: a mean
  score 20% above MuZero's.

A run is trained until it finishes or the call's time is spent (``--limit-s``; it is sent one
SIGINT ``STOP_S`` before, saves its checkpoint and exits). Once every run of a game has finished,
its evaluations are played, each only while the time left holds one as long as the last; then the
game's learning curves are copied out and, for connect four, the seed that won most games against
``mcts:200`` is exported (:func:`mz_jax.run.export.export_agent`) as ``connect_four_agent/``, a
run directory of a few MB that ``mz-jax eval --workdir`` reads.

Output (``--out-dir``, default ``benchmarks/games``; with ``--smoke`` a fresh temporary folder):
``results.json``, ``{"runs": [...]}``, to which each call appends one record (``date``, ``device``,
``commit``, ``command``, ``versions`` and, per game, ``games[game]``: the runs' progress and, for
each opponent and seat (``total``, ``moving_first``, ``moving_second``), the games, wins, draws
and losses over all seeds with the win rate and its 95% Wilson interval, and per seed; for 2048
each run's mean score per seed and Stochastic MuZero's advantage with a 95% bootstrap interval
over seeds); ``RESULTS-gpu-games-section.md``, this call's dated section for
``benchmarks/RESULTS-gpu.md``; ``<game>/<run>/`` the learning curve and ``metrics.jsonl``; and
``connect_four_agent/``. Everything is rewritten after each step, so a call cut short keeps what
it finished.

``--smoke`` shrinks every run (4 environments, an 8-unit MLP or a 1-block, 4-channel ResNet, 64
env steps), one seed a game (two for 2048's interval), 4 games an evaluation and ``mcts:2`` /
``mcts:4`` for the MCTS opponents.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py, gpu.py

import jax
import numpy as np
from common import format_table
from gpu import (
    SMOKE_SHRINK,
    Budget,
    earlier_runs,
    log,
    new_record,
    out_dir_of,
    print_setup,
    run_until,
)

from mz_jax.config.overrides import override
from mz_jax.config.presets import load_preset
from mz_jax.mcts import baseline
from mz_jax.run.records import read_metrics
from mz_jax.run.workdir import RESULTS_FILE, write_atomically
from mz_jax.suite import aggregate

SECTION_FILE = "RESULTS-gpu-games-section.md"
EVALUATIONS_FILE = "evaluations.json"
AGENT_DIR = "connect_four_agent"
LEASE_COMMAND = (
    "timeout -s INT 560 python3 benchmarks/games/lease.py --workdir /tmp/games --out-dir $OUT"
)
STOP_S = 30.0
"""A training run is sent SIGINT this long before the call's limit: it saves and exits."""
MIN_TRAIN_S = 60.0
"""A run given less than this is not started (start-up and compilation alone take ~30 s)."""
FIRST_EVALUATION_S = 60.0
"""The time an evaluation is expected to take before one has been timed."""
SMOKE_OPPONENTS = {"mcts:200": "mcts:2", "mcts:1000": "mcts:4"}
SMOKE_OVERRIDES = (
    *SMOKE_SHRINK,
    ("warmup_updates", 0),
    ("eval_every_env_steps", 64),
    ("eval_episodes", 2),
    ("eval_max_steps", 8),
    ("network.hidden_sizes", (8,)),
    ("network.latent_size", 8),
)
"""The smoke run's changes to every run (a ResNet stays a ResNet, smaller)."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One training run of a game: a preset with changes, ``num_seeds`` seeds vmapped."""

    name: str
    preset: str
    changes: tuple[tuple[str, object], ...] = ()


@dataclasses.dataclass(frozen=True)
class Game:
    """A game's runs and evaluations.

    Attributes:
      name: the game's key in the results.
      runs: its training runs; the first is the agent evaluated against ``opponents``.
      num_seeds: seeds of each run.
      opponents: the opponents of a two-player game; () for a single-player one, whose runs'
        greedy scores are compared (the first run's against the second's).
      episodes: games per seed and opponent (half moving first), or greedy games per seed.
      target: the issue's target, for the tables.
    """

    name: str
    runs: tuple[Run, ...]
    num_seeds: int
    opponents: tuple[str, ...]
    episodes: int
    target: str


GAMES = {
    "connect_four": Game(
        "connect_four",
        (Run("muzero", "connect_four_gpu"),),
        num_seeds=2,
        opponents=("random", "mcts:200", "mcts:1000"),
        episodes=200,
        target="90% won against mcts:200 in each seat; 99% against random in each seat",
    ),
    "backgammon": Game(
        "backgammon",
        (Run("stochastic_muzero", "backgammon_gpu"),),
        num_seeds=4,
        opponents=("random", "pip_count"),
        episodes=200,
        target="90% won against random",
    ),
    "2048": Game(
        "2048",
        (
            Run("stochastic_muzero", "game_2048_gpu"),
            Run("muzero", "game_2048_gpu", (("network.num_chance_outcomes", None),)),
        ),
        num_seeds=5,
        opponents=(),
        episodes=64,
        target="Stochastic MuZero's mean score at least 20% above MuZero's over at least 5 seeds",
    ),
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a call changes in every game: nothing for a lease, everything small for CI."""

    smoke: bool = False

    def overrides(self, run: Run) -> dict:
        return {**dict(run.changes), **(dict(SMOKE_OVERRIDES) if self.smoke else {})}

    def num_seeds(self, game: Game) -> int:
        if not self.smoke:
            return game.num_seeds
        return 2 if not game.opponents else 1

    def opponent(self, name: str) -> str:
        return SMOKE_OPPONENTS.get(name, name) if self.smoke else name

    def episodes(self, game: Game) -> int:
        return 4 if self.smoke else game.episodes


# --------------------------------------------------------------------------------------------------
# Training.


def flag_arguments(changes: dict) -> list[str]:
    """``mz-jax train`` flags for field changes: ``{"network.num_chance_outcomes": None}`` ->
    ``["--network.num-chance-outcomes", "None"]``; a tuple gives one argument per item."""
    arguments = []
    for field, value in changes.items():
        arguments.append("--" + field.replace("_", "-"))
        values = value if isinstance(value, tuple | list) else (value,)
        arguments += [str(item) for item in values]
    return arguments


def train_arguments(run: Run, workdir: Path, num_seeds: int, settings: Settings) -> list[str]:
    """The arguments of ``mz-jax train`` for ``run`` in ``workdir``."""
    arguments = ["train", "--config", run.preset, "--workdir", str(workdir)]
    arguments += ["--num-seeds", str(num_seeds)]
    return arguments + flag_arguments(settings.overrides(run))


def run_config(run: Run, num_seeds: int, settings: Settings):
    """The configuration ``train_arguments`` gives (checked here before a child starts)."""
    return override(load_preset(run.preset), {**settings.overrides(run), "num_seeds": num_seeds})


def env_steps_done(workdir: Path) -> int:
    """Env steps of the newest record of a run's ``metrics.jsonl`` (0 without one)."""
    return max((int(r.get("env_steps", 0)) for r in read_metrics(workdir)), default=0)


def train(run: Run, game: Game, settings: Settings, workdir: Path, budget: Budget) -> dict:
    """Trains (or resumes) ``run`` in ``workdir`` until it finishes or ``budget`` is spent; returns
    its progress: ``finished``, ``env_steps``, ``total_env_steps``, the ``command``, seconds."""
    num_seeds = settings.num_seeds(game)
    config = run_config(run, num_seeds, settings)
    arguments = train_arguments(run, workdir, num_seeds, settings)
    progress = {
        "preset": run.preset,
        "command": shlex.join(["mz-jax", *arguments]),
        "num_seeds": num_seeds,
        "total_env_steps": config.total_env_steps,
    }
    marker = workdir.parent / f"{run.name}.finished"
    if marker.is_file():
        return {**progress, "finished": True, "env_steps": env_steps_done(workdir), "wall_s": 0.0}
    if not settings.smoke and budget.left() < MIN_TRAIN_S:
        log(f"  {run.name}: {budget.left():.0f} s left, too little to start it")
        return {**progress, "finished": False, "env_steps": env_steps_done(workdir), "wall_s": 0.0}
    log(f"  {progress['command']} (stopped in {budget.left():.0f} s)")
    workdir.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    command = [sys.executable, "-m", "mz_jax.cli.main", *arguments]
    code, stopped = run_until(command, budget, workdir.parent / f"{run.name}.log", label=run.name)
    finished = code == 0 and not stopped
    if finished:
        marker.write_text(f"{config.total_env_steps}\n")
    elif not stopped and code not in (0, 75):
        raise RuntimeError(f"{progress['command']} exited with status {code}")
    return {
        **progress,
        "finished": finished,
        "env_steps": env_steps_done(workdir),
        "wall_s": time.monotonic() - started,
        "exit_code": code,
    }


# --------------------------------------------------------------------------------------------------
# Evaluation.


def seat_counts(evaluations: list[dict]) -> dict[str, dict[str, int]]:
    """Games, wins, draws and losses in each seat of ``baseline.SEATS``, summed over evaluations
    (each ``{seat: {"wins", "draws", "losses", "unfinished"}}``)."""
    totals = {}
    for seat in baseline.SEATS:
        counts = {key: 0 for key in ("games", "wins", "draws", "losses", "unfinished")}
        for evaluation in evaluations:
            row = evaluation[seat]
            for key in ("wins", "draws", "losses", "unfinished"):
                counts[key] += int(row[key])
            counts["games"] += sum(
                int(row[key]) for key in ("wins", "draws", "losses", "unfinished")
            )
        totals[seat] = counts
    return totals


def with_interval(counts: dict[str, int]) -> dict:
    """``counts`` with ``win_rate`` and its 95% Wilson interval ``win_interval`` (None without
    games)."""
    if counts["games"] == 0:
        return {**counts, "win_rate": None, "win_interval": None}
    low, high = aggregate.wilson_interval(counts["wins"], counts["games"])
    return {**counts, "win_rate": counts["wins"] / counts["games"], "win_interval": [low, high]}


def score_advantage(first: list[float], second: list[float], *, seed: int = 0) -> dict:
    """How much the mean of ``first`` (one score per seed) exceeds that of ``second``, as a
    fraction: ``mean(first) / mean(second) - 1``, with a 95% percentile bootstrap interval that
    resamples each list's seeds with replacement (the seeds of the two runs are independent runs),
    2,000 resamples."""
    scores = np.asarray([first, second], dtype=np.float64).T  # [seeds, 2]
    if scores.shape[0] < 1 or not np.all(np.isfinite(scores)) or scores[:, 1].mean() <= 0:
        return {"advantage": None, "interval": None}

    def advantage(resamples: np.ndarray) -> np.ndarray:
        return resamples[..., 0].mean(-1) / resamples[..., 1].mean(-1) - 1.0

    low, high = aggregate.stratified_bootstrap_ci(scores, advantage, seed=seed)
    return {"advantage": float(advantage(scores)), "interval": [low, high]}


def evaluate_seed(workdir: Path, seed_index: int, opponent: str | None, episodes: int) -> dict:
    """The games of seed ``seed_index``'s final agent: against ``opponent`` the counts by seat
    (``baseline.outcome_counts``), alone its scores."""
    from mz_jax.run.agent import Agent

    agent = Agent.restore(workdir, seed_index=seed_index)
    result = jax.device_get(
        agent.evaluate(
            jax.random.key(agent.config.seed),
            num_episodes=episodes,
            max_steps=agent.config.eval_max_steps,
            opponent=opponent,
        )
    )
    record = {"env_steps": agent.env_steps, "checkpoint": agent.checkpoint_step}
    if opponent is None:
        returns = np.asarray(result.episode_return, dtype=np.float64)
        return {**record, "mean": float(returns.mean()), "returns": returns.tolist()}
    return {**record, **baseline.outcome_counts(result.episode_return, result.completed)}


def evaluation_jobs(game: Game, settings: Settings) -> list[tuple[str, Run, int, str | None]]:
    """(key, run, seed index, opponent) of every evaluation of ``game``, in the order played."""
    jobs = []
    runs = game.runs[:1] if game.opponents else game.runs
    for opponent in [settings.opponent(o) for o in game.opponents] or [None]:
        for run in runs:
            for index in range(settings.num_seeds(game)):
                jobs.append((f"{run.name}/{index}/{opponent or 'alone'}", run, index, opponent))
    return jobs


def play_evaluations(
    game: Game, settings: Settings, workdir: Path, budget: Budget, save
) -> tuple[dict, int]:
    """Plays the evaluations of ``game`` not yet in ``WORKDIR/evaluations.json``, each only while
    ``budget`` holds one as long as the last; returns (all evaluations by key, how many are left)."""
    path = workdir / EVALUATIONS_FILE
    done = json.loads(path.read_text()) if path.is_file() else {}
    episodes = settings.episodes(game)
    last = FIRST_EVALUATION_S if not settings.smoke else 0.0
    jobs = [job for job in evaluation_jobs(game, settings) if job[0] not in done]
    for count, (key, run, index, opponent) in enumerate(jobs):
        if not budget.allows(last):
            log(f"  out of time: {len(jobs) - count} evaluation(s) left for the next call")
            return done, len(jobs) - count
        log(f"  {key}: {episodes} games ...")
        started = time.monotonic()
        done[key] = evaluate_seed(workdir / run.name, index, opponent, episodes)
        last = time.monotonic() - started
        done[key]["seconds"] = last
        write_atomically(path, json.dumps(done, indent=2) + "\n")
        save()
    return done, 0


def summarise(game: Game, settings: Settings, evaluations: dict) -> dict:
    """The results of ``game`` from its evaluations: per opponent the counts by seat over all seeds
    with intervals and per seed; for a single-player game each run's scores and the advantage."""
    seeds = range(settings.num_seeds(game))
    if game.opponents:
        run = game.runs[0]
        summary = {}
        for opponent in [settings.opponent(o) for o in game.opponents]:
            rows = [evaluations.get(f"{run.name}/{i}/{opponent}") for i in seeds]
            played = [row for row in rows if row is not None]
            if not played:
                continue
            summary[opponent] = {
                "seeds_played": len(played),
                "seats": {s: with_interval(c) for s, c in seat_counts(played).items()},
                "per_seed": [
                    None if row is None else {s: row[s] for s in baseline.SEATS} for row in rows
                ],
            }
        return {"opponents": summary}
    scores = {}
    for run in game.runs:
        rows = [evaluations.get(f"{run.name}/{i}/alone") for i in seeds]
        scores[run.name] = [None if row is None else row["mean"] for row in rows]
    first, second = (scores[run.name] for run in game.runs[:2])
    complete = [i for i in seeds if first[i] is not None and second[i] is not None]
    comparison = score_advantage([first[i] for i in complete], [second[i] for i in complete])
    return {"scores": scores, "compared_seeds": complete, **comparison}


def strongest_seed(game: Game, settings: Settings, evaluations: dict) -> int | None:
    """The seed index that won most games against the game's second opponent (``mcts:200`` for
    connect four), ties to the lower index; None until every seed has played it."""
    opponent = settings.opponent(game.opponents[min(1, len(game.opponents) - 1)])
    rows = [
        evaluations.get(f"{game.runs[0].name}/{i}/{opponent}")
        for i in range(settings.num_seeds(game))
    ]
    if any(row is None for row in rows):
        return None
    wins = [row["total"]["wins"] for row in rows]
    return int(np.argmax(wins))


def export_outputs(game: Game, workdir: Path, out_dir: Path, best_seed: int | None) -> None:
    """Copies each run's learning curve and metrics to ``OUT_DIR/<game>/<run>/``; for connect
    four, exports the seed ``best_seed`` as ``OUT_DIR/connect_four_agent``."""
    for run in game.runs:
        target = out_dir / game.name / run.name
        target.mkdir(parents=True, exist_ok=True)
        for source in (workdir / run.name).glob("*"):
            if source.is_file() and (
                source.suffix in (".png", ".jsonl") or source.name == "config.json"
            ):
                shutil.copyfile(source, target / source.name)
    if game.name == "connect_four" and best_seed is not None:
        from mz_jax.run.export import export_agent

        staging = Path(tempfile.mkdtemp(prefix="agent_", dir=out_dir)) / AGENT_DIR
        export_agent(workdir / game.runs[0].name, staging, seed_index=best_seed)
        shutil.rmtree(out_dir / AGENT_DIR, ignore_errors=True)
        shutil.move(staging, out_dir / AGENT_DIR)
        shutil.rmtree(staging.parent, ignore_errors=True)


def run_game(
    game: Game, settings: Settings, workdir: Path, out_dir: Path, budget: Budget, save, record
) -> str:
    """Trains, evaluates and exports ``game`` as far as ``budget`` allows; returns its status."""
    entry = record["games"].setdefault(game.name, {"target": game.target, "runs": {}})
    for run in game.runs:
        entry["runs"][run.name] = train(run, game, settings, workdir / run.name, budget)
        save()
        if not entry["runs"][run.name]["finished"]:
            return "training: out of time (run the same command to resume)"
    evaluations, left = play_evaluations(game, settings, workdir, budget, save)
    entry.update(summarise(game, settings, evaluations))
    save()
    best = strongest_seed(game, settings, evaluations) if game.opponents else None
    export_outputs(game, workdir, out_dir, best if left == 0 else None)
    if best is not None and game.name == "connect_four":
        entry["exported_seed_index"] = best
    save()
    return "done" if left == 0 else f"{left} evaluation(s) left for the next call"


# --------------------------------------------------------------------------------------------------
# Tables.


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def result_tables(record: dict) -> dict[str, tuple[list[str], list[list]]]:
    """The call's tables: two-player games by opponent and seat; 2048's scores and advantage."""
    tables = {}
    games = record.get("games", {})
    rows = []
    for name, entry in games.items():
        for opponent, result in entry.get("opponents", {}).items():
            for seat, counts in result["seats"].items():
                low, high = counts["win_interval"] or (None, None)
                rows.append(
                    [
                        name,
                        opponent,
                        seat.replace("_", " "),
                        result["seeds_played"],
                        counts["games"],
                        f"{counts['wins']} / {counts['draws']} / {counts['losses']}"
                        + (f" ({counts['unfinished']})" if counts["unfinished"] else ""),
                        percent(counts["win_rate"]),
                        f"[{percent(low)}, {percent(high)}]",
                    ]
                )
    if rows:
        headers = [
            "game",
            "opponent",
            "seat",
            "seeds",
            "games",
            "W / D / L (unfinished)",
            "won",
            "95% CI",
        ]
        tables["opponents"] = (headers, rows)
    for name, entry in games.items():
        if "scores" not in entry:
            continue
        rows = [
            [run, ", ".join("—" if s is None else f"{s:,.0f}" for s in scores)]
            for run, scores in entry["scores"].items()
        ]
        interval = entry.get("interval") or (None, None)
        rows.append(
            [
                "advantage of the first over the second",
                f"{percent(entry.get('advantage'))} [{percent(interval[0])}, {percent(interval[1])}]",
            ]
        )
        tables[f"scores {name}"] = (["run", "mean greedy score per seed (seeds 0, 1, ...)"], rows)
    progress = [
        [
            name,
            run,
            f"{p['env_steps']:,} / {p['total_env_steps']:,}",
            p["num_seeds"],
            "yes" if p["finished"] else "no",
            f"{p['wall_s']:.0f}",
        ]
        for name, entry in games.items()
        for run, p in entry.get("runs", {}).items()
    ]
    if progress:
        headers = ["game", "run", "env steps", "seeds", "finished", "wall s (this call)"]
        tables["training"] = (headers, progress)
    return tables


def markdown_section(record: dict) -> str:
    """This call's dated section for ``benchmarks/RESULTS-gpu.md``."""
    lines = [
        f"## {record['date'][:10]}: games on {record['device']['kind']}, commit {record['commit']}",
        "",
        f"- Machine: `{record['machine']}`",
        f"- Started {record['date']}; command: `{record['command']}`",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in record["versions"].items()),
        "- Games: " + ", ".join(f"{k} ({v})" for k, v in record["status"].items()),
    ]
    for name, entry in record.get("games", {}).items():
        lines.append(f"- Target, {name}: {entry['target']}")
        for run in entry.get("runs", {}).values():
            lines.append(f"  - `{run['command']}`")
    for title, (headers, rows) in result_tables(record).items():
        lines += ["", f"{title.capitalize()}:", "", format_table(headers, rows)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# The command line.


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: every game on a CPU")
    parser.add_argument("--games", nargs="+", choices=list(GAMES), default=list(GAMES))
    parser.add_argument("--workdir", type=Path, default=None, help="default OUT_DIR/runs")
    parser.add_argument("--out-dir", type=Path, default=None, help="default benchmarks/games")
    parser.add_argument("--limit-s", type=float, default=540.0, help="the call's time")
    parser.add_argument("--print-setup", action="store_true", help="print the commands and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.print_setup:
        print_setup(LEASE_COMMAND)
        return 0
    # Before JAX starts its GPU client: the training runs' processes need memory too.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    settings = Settings(smoke=args.smoke)
    args.out_dir = out_dir_of(args.out_dir, smoke=args.smoke, name="games")
    workdir = args.workdir or args.out_dir / "runs"
    for name in args.games:  # a bad preset or field fails here, before anything trains
        for run in GAMES[name].runs:
            run_config(run, settings.num_seeds(GAMES[name]), settings)
    results_path = args.out_dir / RESULTS_FILE
    runs = earlier_runs(results_path)
    record = {
        **new_record(argv, settings.smoke, args.limit_s, script="games/lease.py"),
        "games": {},
    }
    record["status"] = {}

    def save() -> None:
        write_atomically(results_path, json.dumps({"runs": [*runs, record]}, indent=2) + "\n")
        write_atomically(args.out_dir / SECTION_FILE, markdown_section(record))

    log(f"{record['machine']}\nresults: {results_path}")
    save()
    budget = Budget(time.monotonic() + args.limit_s - STOP_S)
    try:
        for name in [name for name in GAMES if name in args.games]:
            log(f"{name} ({max(budget.left(), 0):.0f} s left) ...")
            try:
                status = run_game(
                    GAMES[name], settings, workdir / name, args.out_dir, budget, save, record
                )
            except Exception as error:  # a lease keeps the other games
                traceback.print_exc()
                status = f"failed: {type(error).__name__}: {error}"
            record["status"][name] = status
            log(f"{name}: {status}")
            save()
    except KeyboardInterrupt:
        log("interrupted: the results so far are saved")
    print(record["machine"])
    for title, (headers, rows) in result_tables(record).items():
        print(f"\n{title.capitalize()}:")
        print(format_table(headers, rows))
    print(f"\nresults: {results_path}\nsection: {args.out_dir / SECTION_FILE}")
    statuses = [record["status"].get(name) for name in args.games]
    return 0 if all(status == "done" for status in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
