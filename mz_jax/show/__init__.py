"""A trained run, seen: what the agent does and how strong each checkpoint is.

::

    watch      greedy episodes as an animated SVG or an HTML page (``mz-jax watch``)
    tree       one search drawn as a tree (``mz-jax tree``)
    play       a person against the agent in the terminal, pgx board games (``mz-jax play``)
    ladder     Elo ratings of a run's kept checkpoints and baselines (``mz-jax ladder``)

and what they are built from: ``episode`` (one greedy episode, recorded step by step), ``frames``
(a position drawn as SVG), ``animation`` (frames as an animated SVG or an HTML page), ``match``
(compiled games between two players) and ``elo`` (ratings from pairwise results).
"""

from mz_jax.show import animation, elo, episode, frames, ladder, match, play, tree, watch

__all__ = ["animation", "elo", "episode", "frames", "ladder", "match", "play", "tree", "watch"]
