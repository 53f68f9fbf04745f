"""How a CartPole run's episodes end: at the track's edge or by the pole's angle.

    python benchmarks/diagnostics/cartpole_failures.py RUN_WORKDIR [--step STEP] [--episodes 50]

gymnax's CartPole-v1 ends an episode once the cart's position leaves [-2.4, 2.4] or the pole's
angle leaves +-12 degrees, after an Euler step that moves each by tau = 0.02 s times its velocity,
so the observation a step was taken from tells which limit ended it. For every seed of the run, at
its checkpoint ``--step`` (default the newest; the names under ``checkpoints/``):

* the replay: the episodes it holds that failed (terminated; a time limit is not a failure), how
  many at the edge and how many by the angle, and the environment step by which the first edge
  end had been collected;
* greedy play: ``--episodes`` episodes as the evaluation plays them (``value_calibration.py``'s
  records): the mean length, how many end at the edge, by the angle or at ``--max-steps``, and the
  network's mean value v(s) at the last state before an edge end (its return from there is 1).

A policy that balances the pole can still drift along the track: a greedy policy whose episodes
end at the edge with a value there as high as anywhere has not learned where the track ends.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import numpy as np
from common import machine_description, print_table

from diagnostics.value_calibration import make_play, parse_play_arguments, play_rows
from mz_jax.run.agent import restore_run_state

CARTPOLE = "gymnax:CartPole-v1"
TAU = 0.02  # seconds per step of gymnax's Euler integration
X_LIMIT = 2.4
THETA_LIMIT = 12 * 2 * np.pi / 360


def end_causes(observation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(edge, angle)``: whether a step taken from ``observation`` ``[..., 4]`` (position,
    velocity, angle, angular velocity) carries the cart past the track's end, and whether it
    carries the pole past its angle; either ends the episode (a step can do both)."""
    position = observation[..., 0] + TAU * observation[..., 1]
    angle = observation[..., 2] + TAU * observation[..., 3]
    return np.abs(position) > X_LIMIT, np.abs(angle) > THETA_LIMIT


def oldest_first(values: np.ndarray, write_index: int, num_written: int) -> np.ndarray:
    """The written rows of a replay ring ``[L, ...]``, oldest first."""
    length = values.shape[0]
    return values[(write_index - num_written + np.arange(num_written)) % length]


def replay_ends(replay, *, rows_written: int, env_steps_per_row: int) -> dict[str, object]:
    """The episode ends one seed's replay holds (its leaves without a seed axis). ``rows_written``
    is how many rows the run wrote in all (more than the ring holds once it wraps);
    ``env_steps_per_row`` the environment steps a row stands for (a row of every stream)."""
    num_written, write_index = int(replay.num_written), int(replay.write_index)
    ended = oldest_first(np.asarray(replay.data.terminated), write_index, num_written)
    observation = oldest_first(np.asarray(replay.data.observation), write_index, num_written)
    edge, angle = end_causes(observation)
    rows, _ = np.nonzero(ended & edge)
    first_edge = None
    if rows.size:
        first_row = rows_written - num_written + int(rows.min())
        first_edge = (first_row + 1) * env_steps_per_row
    return {
        "ended": int(ended.sum()),
        "edge": int((ended & edge).sum()),
        "angle": int((ended & angle).sum()),
        "first_edge": first_edge,
    }


def play_ends(records: dict[str, np.ndarray]) -> dict[str, float | int | None]:
    """How the greedy episodes of ``make_play``'s records end."""
    alive = records["alive"]
    ended = records["terminated"] & alive
    edge, angle = end_causes(records["observation"])
    at_edge = ended & edge
    columns = at_edge.any(axis=0)
    return {
        "mean_length": float(alive.sum(axis=0).mean()),
        "edge": int(columns.sum()),
        "angle": int((ended & angle).any(axis=0).sum()),
        "limit": int((~ended.any(axis=0)).sum()),
        "value_before_edge": float(records["value"][at_edge].mean()) if columns.any() else None,
    }


def failures(
    workdir: str, *, step: int | None, episodes: int, max_steps: int, seed: int
) -> list[list[object]]:
    run = restore_run_state(workdir, step=step)
    config = run.config
    if config.env != CARTPOLE:
        raise ValueError(f"{workdir} trains on {config.env!r}; this script reads {CARTPOLE} only")
    rows, play = [], None
    for index in range(config.num_seeds):
        agent = run.agent(index)
        if play is None:  # compiled once: the seeds of a run share everything but parameters
            play = make_play(agent, episodes=episodes, max_steps=max_steps)
        stored = replay_ends(
            run.seed_state(index).replay,
            rows_written=agent.env_steps // config.env_steps_per_iteration * config.rollout_length,
            env_steps_per_row=config.env_steps_per_iteration // config.rollout_length,
        )
        greedy = play_ends(play(agent.params, jax.random.key(seed)))
        before_edge = greedy["value_before_edge"]
        rows.append(
            [
                agent.config.seed,
                f"{agent.env_steps:,}",
                stored["ended"],
                stored["edge"],
                stored["angle"],
                "-" if stored["first_edge"] is None else f"{stored['first_edge']:,}",
                f"{greedy['mean_length']:.1f}",
                f"{greedy['edge']}/{episodes}",
                f"{greedy['angle']}/{episodes}",
                f"{greedy['limit']}/{episodes}",
                "-" if before_edge is None else f"{before_edge:.1f}",
            ]
        )
    return rows


def main() -> None:
    args = parse_play_arguments(
        argparse.ArgumentParser(description=__doc__.split("\n\n")[0]), episodes=50
    )
    rows = play_rows(failures, args)
    print(f"machine: {machine_description()}")
    print(f"run {args.workdir}: {args.episodes} greedy episodes a seed, at most {args.max_steps}")
    print_table(
        [
            "seed",
            "env steps",
            "replay: ended",
            "at the edge",
            "by the angle",
            "first edge end by",
            "greedy: mean length",
            "at the edge",
            "by the angle",
            "to the limit",
            "v before an edge end",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
