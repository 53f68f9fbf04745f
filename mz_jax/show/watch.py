"""Greedy episodes of a trained agent as an animation: ``mz-jax watch``.

::

    agent = Agent.restore("runs/cartpole")
    write_watch(agent, "cartpole.svg", key=jax.random.key(0), episodes=1, max_steps=200)

Each frame is a position (:mod:`mz_jax.show.frames`), captioned with the episode, the step, the
action the search chose, the reward it got, the search's value of the position and the root's
visit counts; the file is an animated SVG (``.svg``) or an HTML page with controls (``.html``,
:mod:`mz_jax.show.animation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from mz_jax.show import animation, frames
from mz_jax.show.episode import Step, record_episode

FORMATS = (".svg", ".html")
"""The file suffixes :func:`write_watch` writes."""


def caption(
    env_name: str, step: Step, *, episode: int, episode_return: float, two_player: bool = False
) -> str:
    """The caption of one position: ``"episode 1 · step 3 · player 0 · action 1 (right) ·
    reward 1 · value 0.93 · visits 2/14 · return 4"``: the player to move only in a two-player
    game (``two_player``), the action, its reward, the search's value and the root's visit counts
    only where an action was chosen ("end", or "stopped (max steps)", at the last position)."""
    parts = [f"episode {episode}", f"step {step.index}"]
    if two_player:
        parts.append(f"player {step.player}")
    if step.action is None:
        parts.append("end" if step.done else "stopped (max steps)")
    else:
        visits = "/".join(str(int(v)) for v in step.visit_counts)
        parts += [
            f"action {frames.action_name(env_name, step.action)}",
            f"reward {step.reward:g}",
            f"value {step.root_value:.2f}",
            f"visits {visits}",
        ]
    parts.append(f"return {episode_return:g}")
    return " · ".join(parts)


def watch_frames(
    agent: Any, key: jax.Array, *, episodes: int, max_steps: int
) -> tuple[list[str], list[str], list[float]]:
    """``(frames, captions, returns)``: ``episodes`` greedy episodes of ``agent`` drawn position
    by position, and each episode's return (the sum of its rewards; in a two-player game, the
    first mover's score).

    Raises:
      ValueError: if ``episodes`` or ``max_steps`` is not an integer >= 1.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes {episodes!r} is invalid: allowed an integer >= 1")
    env_name = agent.env.name
    two_player = agent.env.num_players == 2
    all_frames, captions, returns = [], [], []
    for episode, episode_key in enumerate(jax.random.split(key, episodes), start=1):
        steps = record_episode(agent, episode_key, max_steps=max_steps)
        scale = np.max(np.abs(np.stack([s.observation.reshape(-1) for s in steps])), axis=0)
        first_player = steps[0].player
        total = 0.0
        for step in steps:
            all_frames.append(frames.draw(env_name, step.observation, step.backend, scale=scale))
            captions.append(
                caption(
                    env_name, step, episode=episode, episode_return=total, two_player=two_player
                )
            )
            sign = 1.0 if agent.env.num_players == 1 or step.player == first_player else -1.0
            total += sign * step.reward
        # The last caption shows the episode's return, after its final reward.
        captions[-1] = caption(
            env_name, steps[-1], episode=episode, episode_return=total, two_player=two_player
        )
        returns.append(total)
    return all_frames, captions, returns


def write_watch(
    agent: Any,
    path: str | Path,
    *,
    key: jax.Array,
    episodes: int = 1,
    max_steps: int = 500,
    seconds_per_frame: float = 0.4,
) -> list[float]:
    """Writes ``episodes`` greedy episodes of ``agent`` to ``path`` (``.svg``: an animated SVG;
    ``.html``: a page with controls) and returns their returns.

    Raises:
      ValueError: for another suffix, or bad ``episodes`` / ``max_steps``.
    """
    path = Path(path)
    if path.suffix not in FORMATS:
        raise ValueError(
            f"path {str(path)!r} is invalid: allowed a file name ending in .svg or .html"
        )
    drawn, captions, returns = watch_frames(agent, key, episodes=episodes, max_steps=max_steps)
    if path.suffix == ".svg":
        text = animation.animated_svg(drawn, captions, seconds_per_frame=seconds_per_frame)
    else:
        title = f"{agent.env.name}: {episodes} greedy episode(s)"
        if agent.env_steps is not None:
            title += f" after {agent.env_steps:,} env steps"
        text = animation.html_page(drawn, captions, title=title)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return returns
