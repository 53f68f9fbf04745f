"""``mz-jax watch``, ``tree``, ``play`` and ``ladder``: see what a trained run does.

::

    mz-jax watch --workdir runs/cartpole --out cartpole.svg     # greedy episodes, animated
    mz-jax tree --workdir runs/tic_tac_toe --moves 4,0          # one search drawn as a tree
    mz-jax play --workdir runs/tic_tac_toe                      # a person against the agent
    mz-jax ladder --workdir runs/tic_tac_toe --players random mcts:50

Each reads a run's directory (never writes into its checkpoints) and restores the newest good
checkpoint, or the checkpoint ``--step`` (:class:`mz_jax.run.agent.Agent`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mz_jax.cli.errors import EXIT_FAILED, EXIT_IO_ERROR, PROG, CliError


def _parser(command: str, description: str, *, step: bool = True) -> argparse.ArgumentParser:
    """The options every command here shares; ``--step`` where it reads one checkpoint."""
    parser = argparse.ArgumentParser(
        prog=f"{PROG} {command}", description=description, allow_abbrev=False
    )
    parser.add_argument("--workdir", required=True, help="the run's directory (holds config.json)")
    if step:
        parser.add_argument(
            "--step",
            type=int,
            default=None,
            help="the checkpoint of this step (a name under checkpoints/), not the newest",
        )
    parser.add_argument(
        "--seed-index",
        type=int,
        default=0,
        help="which run of a multi-seed run (trained with --num-seeds) (default 0)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the episodes or games (default 0)"
    )
    return parser


def _positive(flag: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise CliError(f"{flag} {value} is invalid: allowed an integer >= 1")


def _restore(args: argparse.Namespace, *, num_simulations: int | None = None) -> Any:
    """The agent of ``args.workdir`` at ``args.step``, one-line errors as ``mz-jax eval``'s."""
    from mz_jax.run.agent import Agent
    from mz_jax.run.checkpoint import CheckpointError

    try:
        agent = Agent.restore(args.workdir, seed_index=args.seed_index, step=args.step)
        if num_simulations is not None:
            agent = agent.with_search(num_simulations=num_simulations)
    except (FileNotFoundError, ValueError) as error:  # not a run's workdir; a bad step
        raise CliError(str(error)) from error
    except CheckpointError as error:  # no checkpoint of the run restores
        raise CliError(str(error), status=EXIT_FAILED) from error
    return agent


def _written(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {str(path)!r}: {error}", status=EXIT_IO_ERROR) from error


def _source(agent: Any) -> str:
    return f"checkpoint {agent.checkpoint_step} ({agent.env_steps:,} env steps)"


def watch(argv: list[str]) -> int:
    parser = _parser(
        "watch",
        "Greedy episodes of a trained agent as an animation: an animated SVG (.svg) or a page "
        "with controls (.html), each frame captioned with the step, action, reward, the search's "
        "value and its visit counts.",
    )
    parser.add_argument("--episodes", type=int, default=1, help="episodes (default 1)")
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="decisions an episode may last (default: the run's eval_max_steps)",
    )
    parser.add_argument(
        "--out", default=None, help="the file to write, .svg or .html (default WORKDIR/watch.html)"
    )
    args = parser.parse_args(argv)
    _positive("--episodes", args.episodes)
    _positive("--max-steps", args.max_steps)
    out = Path(args.out) if args.out else Path(args.workdir) / "watch.html"
    from mz_jax.show import watch as watch_lib

    if out.suffix not in watch_lib.FORMATS:
        raise CliError(
            f"--out {str(out)!r} is invalid: allowed a file name ending in .svg or .html"
        )
    import jax

    agent = _restore(args)
    max_steps = args.max_steps or agent.config.eval_max_steps
    print(f"{agent.env.name}, {_source(agent)}: playing {args.episodes} greedy episode(s)")
    try:
        returns = watch_lib.write_watch(
            agent, out, key=jax.random.key(args.seed), episodes=args.episodes, max_steps=max_steps
        )
    except OSError as error:
        raise CliError(f"cannot write {str(out)!r}: {error}", status=EXIT_IO_ERROR) from error
    print(f"returns: {', '.join(f'{r:g}' for r in returns)}")
    print(f"wrote {out}; open it in a web browser")
    return 0


def _moves(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: allowed action indices separated by commas, e.g. 4,0,8"
        ) from None


def tree(argv: list[str]) -> int:
    parser = _parser(
        "tree",
        "One greedy search of a trained agent drawn as a tree (visits N, values V, priors P, edge "
        "values Q, the chosen action in red), as SVG or an HTML page.",
    )
    parser.add_argument(
        "--moves",
        type=_moves,
        default=[],
        help="actions played from the start of an episode to reach the position, e.g. 4,0 "
        "(default: the first position)",
    )
    parser.add_argument("--max-depth", type=int, default=3, help="depths drawn (default 3)")
    parser.add_argument(
        "--max-children", type=int, default=5, help="most-visited children drawn a node (default 5)"
    )
    parser.add_argument(
        "--simulations", type=int, default=None, help="simulations (default: the run's)"
    )
    parser.add_argument(
        "--out", default=None, help="the file to write, .svg or .html (default WORKDIR/tree.svg)"
    )
    args = parser.parse_args(argv)
    _positive("--simulations", args.simulations)
    _positive("--max-children", args.max_children)
    if args.max_depth < 0:
        raise CliError(f"--max-depth {args.max_depth} is invalid: allowed an integer >= 0")
    out = Path(args.out) if args.out else Path(args.workdir) / "tree.svg"
    if out.suffix not in (".svg", ".html"):
        raise CliError(
            f"--out {str(out)!r} is invalid: allowed a file name ending in .svg or .html"
        )
    import html

    import jax

    from mz_jax.show import frames
    from mz_jax.show import tree as tree_lib
    from mz_jax.show.episode import position_after

    agent = _restore(args, num_simulations=args.simulations)
    env = agent.env
    try:
        observation, legal, backend = position_after(env, jax.random.key(args.seed), args.moves)
    except ValueError as error:
        raise CliError(f"--moves: {error}") from None
    output, search_tree = agent.search_with_tree(
        jax.random.key(args.seed), observation[None], legal[None]
    )
    action = int(output.action[0])
    nodes = tree_lib.tree_nodes(
        search_tree, max_depth=args.max_depth, max_children=args.max_children
    )

    def edge_name(edge: int) -> str:
        if edge < env.num_actions:
            return f"a {frames.action_name(env.name, edge)}"
        return f"chance {edge - env.num_actions}"

    title = (
        f"{env.name}, {_source(agent)}: {agent.search_config.num_simulations} simulations, "
        f"action {frames.action_name(env.name, action)}"
    )
    svg = tree_lib.tree_svg(nodes, chosen_action=action, edge_name=edge_name, title=title)
    if out.suffix == ".html":
        position = frames.draw(env.name, observation, backend)
        svg = (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>'
            f"{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>"
            f"<p>The position searched:</p>{position}<p>The search:</p>{svg}</body></html>\n"
        )
    _written(out, svg)
    print(title)
    print(f"root value {float(output.root_value[0]):.4g}; wrote {out} ({len(nodes)} nodes)")
    return 0


def play(argv: list[str]) -> int:
    parser = _parser(
        "play",
        "Play a pgx board game against a trained agent in the terminal: the board is drawn as "
        "text, moves are typed as coordinates (b2; a column letter in connect four) or action "
        "indices, q quits.",
    )
    parser.add_argument("--second", action="store_true", help="let the agent move first")
    parser.add_argument(
        "--simulations", type=int, default=None, help="the agent's simulations (default: the run's)"
    )
    args = parser.parse_args(argv)
    _positive("--simulations", args.simulations)
    from mz_jax.run.resume import read_config
    from mz_jax.show import play as play_lib

    try:
        env_name = read_config(args.workdir).env
    except (FileNotFoundError, ValueError) as error:
        raise CliError(str(error)) from error
    if env_name not in play_lib.SUPPORTED_GAMES:  # said before the (slower) restore
        raise CliError(
            f"{env_name!r} cannot be played in the terminal; supported: "
            f"{', '.join(play_lib.SUPPORTED_GAMES)}"
        )
    import jax

    agent = _restore(args, num_simulations=args.simulations)
    print(f"{env_name}, {_source(agent)}, {agent.search_config.num_simulations} simulations a move")
    try:
        play_lib.play_in_terminal(agent, agent_first=args.second, key=jax.random.key(args.seed))
    except (play_lib.GameAbandoned, KeyboardInterrupt):
        print("game abandoned")
    return 0


def ladder(argv: list[str]) -> int:
    parser = _parser(
        "ladder",
        "Rate a run's kept checkpoints (and baseline players) by round-robin matches on one Elo "
        "scale, or, in a single-player environment, by their greedy returns; prints a table and "
        "writes ladder.json and ladder.png.",
        step=False,
    )
    parser.add_argument(
        "--players",
        nargs="*",
        default=None,
        metavar="PLAYER",
        help="baseline players beside the checkpoints: random, mcts:N (pgx games) (default: "
        "random in a two-player game, none in a single-player one)",
    )
    parser.add_argument(
        "--games",
        type=int,
        default=32,
        help="games a pair, even (single-player: episodes a checkpoint) (default 32)",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="moves a game may last (default: the run's "
        "eval_max_steps); an unfinished game is a draw",
    )
    parser.add_argument(
        "--opening-moves",
        type=int,
        default=2,
        help="uniformly random moves that open each game, so that greedy agents meet in varied "
        "positions (default 2)",
    )
    parser.add_argument(
        "--out", default=None, help="directory for ladder.json and ladder.png (default WORKDIR)"
    )
    args = parser.parse_args(argv)
    import jax

    from mz_jax.run.checkpoint import CheckpointError
    from mz_jax.show import ladder as ladder_lib

    try:
        result = ladder_lib.run_ladder(
            args.workdir,
            players=args.players,
            games=args.games,
            key=jax.random.key(args.seed),
            max_steps=args.max_steps,
            opening_moves=args.opening_moves,
            seed_index=args.seed_index,
        )
    except (FileNotFoundError, ValueError) as error:
        raise CliError(str(error)) from error
    except CheckpointError as error:
        raise CliError(str(error), status=EXIT_FAILED) from error
    print(result.table())
    out = Path(args.out) if args.out else Path(args.workdir)
    _written(out / "ladder.json", result.to_json())
    try:
        ladder_lib.plot_ladder(result, out / "ladder.png")
    except OSError as error:
        message = f"cannot write {str(out / 'ladder.png')!r}: {error}"
        raise CliError(message, status=EXIT_IO_ERROR) from error
    print(f"wrote {out / 'ladder.json'} and {out / 'ladder.png'}")
    return 0
