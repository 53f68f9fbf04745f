"""``mz-jax eval``: greedy evaluation of the newest good checkpoint of a training run (or of the
checkpoint ``--step``), alone or against an opponent in a two-player game (a uniformly random
player, the MCTS baseline ``mcts:N`` of :mod:`mz_jax.mcts.baseline`, backgammon's pip-count
heuristic ``pip_count`` of :mod:`mz_jax.envs.backgammon`, or the agent itself)."""

from __future__ import annotations

import argparse

from mz_jax.cli.errors import EXIT_FAILED, PROG, CliError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} eval",
        description="Greedy evaluation of the newest good checkpoint of a training run, or of the "
        "checkpoint --step.",
        allow_abbrev=False,
    )
    parser.add_argument("--workdir", required=True, help="the run's directory (holds config.json)")
    parser.add_argument(
        "--episodes", type=int, default=None, help="episodes (default: the run's eval_episodes)"
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="steps an episode may last (default: the run's eval_max_steps)",
    )
    parser.add_argument(
        "--opponent",
        type=_opponent,
        default=None,
        metavar="{random,mcts:N,pip_count,self}",
        help="two-player games: 'random', a uniformly random player (default), 'mcts:N', MCTS "
        "with N simulations and random rollouts on the true game (pgx games), or 'pip_count', the "
        "move that most improves the pip-count race (pgx:backgammon only), the agent taking each "
        "seat in half of the episodes; or 'self', the agent against itself",
    )
    parser.add_argument(
        "--num-simulations",
        type=int,
        default=None,
        help="search with this many simulations a move (default: the run's search.num_simulations)",
    )
    parser.add_argument(
        "--step",
        type=int,
        default=None,
        help="evaluate the checkpoint of this step (a name under checkpoints/), not the newest",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the evaluation episodes")
    parser.add_argument(
        "--seed-index",
        type=int,
        default=0,
        help="which run of a multi-seed run (trained with --num-seeds) to evaluate (default 0)",
    )
    return parser


def _opponent(text: str) -> str:
    """``--opponent``: ``"self"`` or what :func:`mz_jax.mcts.baseline.parse_opponent` accepts."""
    if text == "self":
        return text
    from mz_jax.mcts.baseline import ALLOWED_OPPONENTS, parse_opponent

    try:
        parse_opponent(text)
    except ValueError:
        allowed = f"'self', {ALLOWED_OPPONENTS}"
        raise argparse.ArgumentTypeError(
            f"opponent {text!r} is invalid: allowed {allowed}"
        ) from None
    return text


def evaluate_run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.episodes is not None and args.episodes < 1:
        raise CliError(f"--episodes {args.episodes} is invalid: allowed an integer >= 1")
    if args.max_steps is not None and args.max_steps < 1:
        raise CliError(f"--max-steps {args.max_steps} is invalid: allowed an integer >= 1")
    if args.num_simulations is not None and args.num_simulations < 1:
        raise CliError(
            f"--num-simulations {args.num_simulations} is invalid: allowed an integer >= 1"
        )

    import jax
    import numpy as np

    from mz_jax.mcts import baseline
    from mz_jax.run.agent import Agent
    from mz_jax.run.checkpoint import CheckpointError
    from mz_jax.run.resume import read_config
    from mz_jax.training.build import make_run_env

    try:
        config = read_config(args.workdir)
        # Checked before the (slower) restore; pgx and gymnax environments build in milliseconds.
        env = make_run_env(config)
        two_player = env.num_players == 2
        if not two_player and args.opponent == "self":
            raise CliError(f"--opponent self: {config.env} is a single-player environment")
        if args.opponent not in (None, "self"):
            try:
                baseline.check_opponent_env(env, args.opponent, field="--opponent")
            except ValueError as error:
                raise CliError(str(error)) from None
        agent = Agent.restore(args.workdir, seed_index=args.seed_index, step=args.step)
        if args.num_simulations is not None:
            agent = agent.with_search(num_simulations=args.num_simulations)
    except (FileNotFoundError, ValueError) as error:  # not a run's workdir; a bad config.json
        raise CliError(str(error)) from error
    except CheckpointError as error:  # no checkpoint of the run restores
        raise CliError(str(error), status=EXIT_FAILED) from error
    opponent = None if not two_player or args.opponent == "self" else args.opponent or "random"
    episodes = args.episodes or config.eval_episodes
    max_steps = args.max_steps or config.eval_max_steps
    result = jax.device_get(
        agent.evaluate(
            jax.random.key(args.seed),
            num_episodes=episodes,
            max_steps=max_steps,
            opponent=opponent,
        )
    )
    returns = np.asarray(result.episode_return, np.float64)
    completed = np.asarray(result.completed, bool)
    against = {"random": " against a random player", None: " in self-play" if two_player else ""}
    against.setdefault(opponent, f" against {opponent}")
    of_seed = f" (run of seed {agent.config.seed})" if config.num_seeds > 1 else ""
    simulations = agent.search_config.num_simulations
    print(
        f"{config.env}{of_seed}, checkpoint {agent.checkpoint_step} ({agent.updates:,} updates, "
        f"{agent.env_steps:,} env steps): {episodes} greedy episodes{against[opponent]}, "
        f"{int(completed.sum())} finished within {max_steps} steps; {simulations} simulation"
        f"{'' if simulations == 1 else 's'} a move"
    )
    print(
        f"return: mean {returns.mean():.4g}, min {returns.min():.4g}, max {returns.max():.4g}; "
        f"mean length {np.mean(result.episode_length):.1f}"
    )
    if two_player:
        # mz_jax.training.evaluate.evaluate gives the agent the first move in the first half of the episodes
        # and returns each episode's result from the agent's seat (+1 win, -1 loss).
        if opponent is None:  # both seats are the agent's: report from the first mover's seat
            first = np.arange(episodes) < (episodes + 1) // 2
            counts = baseline.outcome_counts(np.where(first, returns, -returns), completed)
            groups = {"first mover": counts["total"]}
        else:
            counts = baseline.outcome_counts(returns, completed)
            groups = {seat.replace("_", " "): counts[seat] for seat in baseline.SEATS}
        for label, count in groups.items():
            line = (
                f"{label}: wins {count['wins']}, draws {count['draws']}, losses {count['losses']}"
            )
            unfinished = count["unfinished"]
            print(line + (f", unfinished {unfinished}" if unfinished else ""))
    return 0
