"""One position of an environment drawn as an SVG image, with no package beyond the environment.

:func:`draw` picks the picture by environment: pgx games draw themselves (``State.to_svg``); the
classic-control environments are drawn from their observation (CartPole's cart and pole,
Acrobot's two links and the goal line, MountainCar's hill and car); image observations (MinAtar,
bsuite's Catch and DeepSea, ``[H, W]`` or ``[H, W, C]``) as grids of cells, one colour a channel;
any other observation as a bar per component. Each picture is a complete ``<svg>`` element with
``width`` and ``height`` in pixels.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np

from mz_jax.envs.pgx_adapter import PGX_PREFIX
from mz_jax.show import play

CHANNEL_COLOURS = (
    "#4477aa",
    "#ee6677",
    "#228833",
    "#ccbb44",
    "#66ccee",
    "#aa3377",
    "#bbbbbb",
    "#000000",
)
"""Colours of an image observation's channels, in order (Paul Tol's bright scheme), repeated
for more channels."""

ACTION_NAMES = {
    "gymnax:CartPole-v1": ("left", "right"),
    "gymnax:Acrobot-v1": ("torque -1", "torque 0", "torque +1"),
    "gymnax:MountainCar-v0": ("left", "none", "right"),
    "gymnax:Catch-bsuite": ("left", "stay", "right"),
    "gymnax:DeepSea-bsuite": ("action 0", "action 1"),
    "toy:detour": ("left", "right"),
}
"""Names of the actions of some environments, for captions; others are named by index."""


def action_name(env_name: str, action: int) -> str:
    """The name of ``action`` in ``env_name`` for a caption: ``"1 (right)"``, ``"4 (b2)"`` (a
    board game's coordinates, :func:`mz_jax.show.play.move_name`) or ``"4"``."""
    if env_name in play.SUPPORTED_GAMES:
        return f"{action} ({play.move_name(env_name, action)})"
    names = ACTION_NAMES.get(env_name)
    return f"{action} ({names[action]})" if names and 0 <= action < len(names) else str(action)


def draw(env_name: str, observation: np.ndarray, backend: Any = None, *, scale: Any = None) -> str:
    """The position as an ``<svg>`` string.

    Args:
      env_name: the environment's name (``Env.name``).
      observation: ``[*observation_shape]``, the observation at the position.
      backend: the environment's own state there; a pgx ``State`` (unbatched) is drawn by pgx.
      scale: for the bar picture, ``[D]`` magnitudes that fill a bar (e.g. the largest ``|x|`` of
        each component over an episode); default the observation's own magnitudes.
    """
    observation = np.asarray(observation, np.float32)
    if env_name.startswith(PGX_PREFIX) and backend is not None:
        return _pgx(backend)
    if env_name == "gymnax:CartPole-v1":
        return cartpole(observation)
    if env_name == "gymnax:Acrobot-v1":
        return acrobot(observation)
    if env_name == "gymnax:MountainCar-v0":
        return mountain_car(observation)
    if observation.ndim in (2, 3):
        return grid(observation)
    return bars(observation.reshape(-1), scale=scale)


def _svg(width: int, height: int, body: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><rect width="{width}" height="{height}" fill="white"/>'
        f"{body}</svg>"
    )


def _pgx(backend: Any) -> str:
    """pgx's own drawing of one state, without its XML declaration."""
    svg = backend.to_svg()
    return re.sub(r"^<\?xml[^>]*\?>\s*", "", svg)


def cartpole(observation: np.ndarray, *, width: int = 320, height: int = 160) -> str:
    """CartPole-v1 from ``[x, x_dot, theta, theta_dot]``: the track to ±2.4 (where the episode
    ends), the cart at ``x`` and the pole (length 1, gymnax's half-length 0.5 doubled) at angle
    ``theta`` from upright, clockwise positive."""
    x, _, theta, _ = (float(v) for v in observation[:4])
    unit = width / 6.0  # the track's ±2.4 and a margin
    ground = height * 0.75
    cart_x = width / 2 + x * unit
    pole_end = (cart_x + unit * math.sin(theta), ground - 12 - unit * math.cos(theta))
    body = (
        f'<line x1="{width / 2 - 2.4 * unit:.1f}" y1="{ground:.1f}" '
        f'x2="{width / 2 + 2.4 * unit:.1f}" y2="{ground:.1f}" stroke="#444" stroke-width="2"/>'
        f'<rect x="{cart_x - 20:.1f}" y="{ground - 24:.1f}" width="40" height="24" fill="#4477aa"/>'
        f'<line x1="{cart_x:.1f}" y1="{ground - 12:.1f}" x2="{pole_end[0]:.1f}" '
        f'y2="{pole_end[1]:.1f}" stroke="#cc8844" stroke-width="6" stroke-linecap="round"/>'
    )
    return _svg(width, height, body)


def acrobot(observation: np.ndarray, *, size: int = 220) -> str:
    """Acrobot-v1 from ``[cos θ1, sin θ1, cos θ2, sin θ2, θ1_dot, θ2_dot]``: two links of length 1
    hanging from the pivot (θ1 from straight down, θ2 relative to the first link) and the goal
    line one link above the pivot, which the tip must pass."""
    cos1, sin1, cos2, sin2 = (float(v) for v in observation[:4])
    theta1 = math.atan2(sin1, cos1)
    theta2 = math.atan2(sin2, cos2)
    unit = size / 5.0
    pivot = (size / 2, size / 2)
    elbow = (pivot[0] + unit * math.sin(theta1), pivot[1] + unit * math.cos(theta1))
    tip = (
        elbow[0] + unit * math.sin(theta1 + theta2),
        elbow[1] + unit * math.cos(theta1 + theta2),
    )
    goal = pivot[1] - unit
    body = (
        f'<line x1="0" y1="{goal:.1f}" x2="{size}" y2="{goal:.1f}" stroke="#228833" '
        'stroke-dasharray="4 4"/>'
        f'<polyline points="{pivot[0]:.1f},{pivot[1]:.1f} {elbow[0]:.1f},{elbow[1]:.1f} '
        f'{tip[0]:.1f},{tip[1]:.1f}" fill="none" stroke="#4477aa" stroke-width="6" '
        'stroke-linecap="round" stroke-linejoin="round"/>'
        f'<circle cx="{pivot[0]:.1f}" cy="{pivot[1]:.1f}" r="4" fill="#444"/>'
    )
    return _svg(size, size, body)


def mountain_car(observation: np.ndarray, *, width: int = 320, height: int = 200) -> str:
    """MountainCar-v0 from ``[position, velocity]``: the hill ``y = sin(3 x)`` over x in [-1.2,
    0.6], the flag at 0.5 and the car on the hill."""

    def point(x: float) -> tuple[float, float]:
        return ((x + 1.2) / 1.8 * (width - 20) + 10, height - 20 - (math.sin(3 * x) + 1) * 70)

    hill = " ".join(f"{px:.1f},{py:.1f}" for px, py in map(point, np.linspace(-1.2, 0.6, 60)))
    car = point(float(observation[0]))
    flag = point(0.5)
    body = (
        f'<polyline points="{hill}" fill="none" stroke="#444" stroke-width="2"/>'
        f'<line x1="{flag[0]:.1f}" y1="{flag[1]:.1f}" x2="{flag[0]:.1f}" y2="{flag[1] - 30:.1f}" '
        'stroke="#228833" stroke-width="2"/>'
        f'<circle cx="{car[0]:.1f}" cy="{car[1] - 8:.1f}" r="8" fill="#4477aa"/>'
    )
    return _svg(width, height, body)


def grid(observation: np.ndarray, *, cell: int = 16) -> str:
    """An image observation ``[H, W]`` or ``[H, W, C]`` as ``H x W`` cells: each cell in the
    colour of its first non-zero channel (:data:`CHANNEL_COLOURS`), its opacity the value (clipped
    to [0, 1]); empty cells white."""
    image = observation if observation.ndim == 3 else observation[..., None]
    rows, columns, channels = image.shape
    cells = []
    for channel in range(channels):
        colour = CHANNEL_COLOURS[channel % len(CHANNEL_COLOURS)]
        earlier = np.any(image[..., :channel] != 0, axis=-1)
        for row, column in zip(*np.nonzero((image[..., channel] != 0) & ~earlier), strict=True):
            opacity = float(np.clip(abs(image[row, column, channel]), 0.0, 1.0))
            cells.append(
                f'<rect x="{column * cell}" y="{row * cell}" width="{cell}" height="{cell}" '
                f'fill="{colour}" fill-opacity="{opacity:.2f}"/>'
            )
    frame = f'<rect width="{columns * cell}" height="{rows * cell}" fill="none" stroke="#888"/>'
    return _svg(columns * cell, rows * cell, "".join(cells) + frame)


def bars(values: np.ndarray, *, scale: Any = None, width: int = 320, row: int = 18) -> str:
    """A vector observation ``[D]`` as one horizontal bar a component, from a centre line: right
    for positive, left for negative, full length at ``scale`` (default ``|values|``, at least
    1e-6), each labelled with its index and value."""
    values = np.asarray(values, np.float32)
    scale = np.abs(values) if scale is None else np.asarray(scale, np.float32)
    scale = np.maximum(np.broadcast_to(scale, values.shape), 1e-6)
    centre, half = width / 2 + 30, width / 2 - 40
    body = []
    for index, (value, magnitude) in enumerate(zip(values, scale, strict=True)):
        length = float(np.clip(value / magnitude, -1.0, 1.0)) * half
        y = index * row + 3
        body.append(
            f'<rect x="{min(centre, centre + length):.1f}" y="{y}" width="{abs(length):.1f}" '
            f'height="{row - 6}" fill="#4477aa"/>'
            f'<text x="2" y="{y + row - 8}" font-size="11" font-family="monospace">'
            f"{index}: {html.escape(f'{value:.3g}')}</text>"
        )
    body.append(
        f'<line x1="{centre}" y1="0" x2="{centre}" y2="{len(values) * row}" stroke="#444"/>'
    )
    return _svg(width, len(values) * row, "".join(body))
