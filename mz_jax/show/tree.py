"""One search drawn as a tree: ``mz-jax tree``.

::

    output, tree = agent.search_with_tree(key, observation[None], legal[None])
    nodes = tree_nodes(tree)
    svg = tree_svg(nodes, chosen_action=int(output.action[0]))

:func:`tree_nodes` reads mctx's :class:`mctx.Tree` (one row of its batch) into the nodes to draw:
each visited node down to ``max_depth``, and of each node's children the ``max_children`` most
visited. A node shows the edge that leads to it (the action, or the chance outcome in a
Stochastic MuZero tree), its visit count N, its search value V (for the player to move there),
and the edge's prior P and value Q = r + γ·V(child) as the parent saw it (mctx's ``qvalues``).
:func:`tree_svg` lays them out top-down and marks the action the search chose.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

BOX_WIDTH, BOX_HEIGHT = 112, 44
"""Size of a node's box in pixels."""

GAP_X, GAP_Y = 12, 40
"""Pixels between neighbouring boxes, and between a depth and the next."""


class DrawnNode(NamedTuple):
    """A node of the drawing.

    Attributes:
      node: its index in the mctx tree (0 the root).
      parent: the index in the drawn list of its parent, None for the root.
      edge: the child slot it hangs from (an action, or ``num_actions + k`` for chance outcome k
        of a Stochastic MuZero tree), None for the root.
      depth: 0 for the root.
      visits: N, its visit count.
      value: V, its search value (mctx ``node_values``), for the player to move there.
      prior: P, the parent's prior probability of the edge (None for the root).
      q: Q, the edge's value for the parent, ``reward + discount * V`` (None for the root).
      x: the horizontal centre of its box, in boxes (0 the leftmost).
    """

    node: int
    parent: int | None
    edge: int | None
    depth: int
    visits: int
    value: float
    prior: float | None
    q: float | None
    x: float


def tree_nodes(
    tree: Any,
    *,
    batch_index: int = 0,
    max_depth: int = 3,
    max_children: int = 5,
) -> list[DrawnNode]:
    """The nodes of row ``batch_index`` of ``tree`` to draw, in depth-first order (the root
    first, children by visits, most first).

    Raises:
      ValueError: for ``max_depth`` < 0 or ``max_children`` < 1.
    """
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
        raise ValueError(f"max_depth {max_depth!r} is invalid: allowed an integer >= 0")
    if isinstance(max_children, bool) or not isinstance(max_children, int) or max_children < 1:
        raise ValueError(f"max_children {max_children!r} is invalid: allowed an integer >= 1")
    row = {
        name: np.asarray(getattr(tree, name)[batch_index])
        for name in (
            "node_visits",
            "node_values",
            "children_index",
            "children_prior_logits",
            "children_visits",
            "children_rewards",
            "children_discounts",
            "children_values",
        )
    }
    nodes: list[DrawnNode] = []
    next_leaf = [0.0]

    def visit(node: int, parent: int | None, edge: int | None, depth: int) -> float:
        index = len(nodes)
        nodes.append(DrawnNode(node, parent, edge, depth, 0, 0.0, None, None, 0.0))
        children = []
        if depth < max_depth:
            visited = np.flatnonzero(row["children_visits"][node] > 0)
            order = visited[np.argsort(-row["children_visits"][node][visited], kind="stable")]
            children = [int(e) for e in order[:max_children]]
        xs = [visit(int(row["children_index"][node, e]), index, e, depth + 1) for e in children]
        x = (xs[0] + xs[-1]) / 2 if xs else next_leaf[0]
        if not xs:
            next_leaf[0] += 1.0
        prior = q = None
        if parent is not None:
            parent_node = nodes[parent].node
            logits = row["children_prior_logits"][parent_node].astype(np.float64)
            probabilities = np.exp(logits - logits.max())
            prior = float(probabilities[edge] / probabilities.sum())
            q = float(
                row["children_rewards"][parent_node, edge]
                + row["children_discounts"][parent_node, edge]
                * row["children_values"][parent_node, edge]
            )
        nodes[index] = nodes[index]._replace(
            visits=int(row["node_visits"][node]),
            value=float(row["node_values"][node]),
            prior=prior,
            q=q,
            x=x,
        )
        return x

    visit(0, None, None, 0)
    return nodes


def tree_svg(
    nodes: list[DrawnNode],
    *,
    chosen_action: int | None = None,
    edge_name: Callable[[int], str] = str,
    title: str = "",
) -> str:
    """The nodes of :func:`tree_nodes` drawn top-down as one ``<svg>``: a box a node with its
    edge's name (``edge_name(edge)``), N, V, P and Q; the root's edge ``chosen_action`` drawn
    thick and red; ``title`` above the tree."""
    top = 24 if title else 4
    width = max(
        (max(n.x for n in nodes) + 1) * (BOX_WIDTH + GAP_X) + GAP_X,
        2 * GAP_X + 7.5 * len(title),  # the title at 13 px, about 7.5 px a character
    )
    depth = max(n.depth for n in nodes)
    height = top + (depth + 1) * (BOX_HEIGHT + GAP_Y)

    def centre(n: DrawnNode) -> tuple[float, float]:
        return (
            GAP_X + n.x * (BOX_WIDTH + GAP_X) + BOX_WIDTH / 2,
            top + n.depth * (BOX_HEIGHT + GAP_Y),
        )

    edges, boxes = [], []
    for n in nodes:
        cx, cy = centre(n)
        chosen = n.depth == 1 and n.edge == chosen_action
        if n.parent is not None:
            px, py = centre(nodes[n.parent])
            style = 'stroke="#cc3311" stroke-width="3"' if chosen else 'stroke="#888"'
            edges.append(
                f'<line x1="{px:.1f}" y1="{py + BOX_HEIGHT:.1f}" x2="{cx:.1f}" y2="{cy:.1f}" '
                f"{style}/>"
            )
        first = "root" if n.edge is None else edge_name(n.edge)
        second = f"N {n.visits}  V {_number(n.value)}"
        third = "" if n.prior is None else f"P {n.prior:.2f}  Q {_number(n.q)}"
        boxes.append(
            f'<g font-family="monospace" font-size="10" text-anchor="middle">'
            f'<rect x="{cx - BOX_WIDTH / 2:.1f}" y="{cy:.1f}" width="{BOX_WIDTH}" '
            f'height="{BOX_HEIGHT}" rx="4" fill="{"#fde0dc" if chosen else "#eef3fa"}" '
            f'stroke="{"#cc3311" if chosen else "#4477aa"}"/>'
            f'<text x="{cx:.1f}" y="{cy + 12:.1f}" font-weight="bold">{html.escape(first)}</text>'
            f'<text x="{cx:.1f}" y="{cy + 25:.1f}">{html.escape(second)}</text>'
            f'<text x="{cx:.1f}" y="{cy + 38:.1f}">{html.escape(third)}</text></g>'
        )
    heading = (
        f'<text x="{GAP_X}" y="16" font-family="sans-serif" font-size="13">'
        f"{html.escape(title)}</text>"
        if title
        else ""
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}"><rect width="100%" height="100%" fill="white"/>'
        f"{heading}{''.join(edges)}{''.join(boxes)}</svg>\n"
    )


def _number(value: float) -> str:
    """A value in at most 6 characters: two decimals below 10, one below 100, none above."""
    magnitude = abs(value)
    digits = 2 if magnitude < 10 else 1 if magnitude < 100 else 0
    text = f"{value:.{digits}f}"
    return text[1:] if text.lstrip("-0.") == "" and text.startswith("-") else text
