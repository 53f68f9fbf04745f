"""The parts of mctx's private modules (``mctx._src``) that :mod:`mz_jax.mcts.chance_gumbel` uses.

mctx has no public API for running Gumbel MuZero's root selection on a Stochastic MuZero tree: its
``stochastic_muzero_policy`` is pUCT only, and the pieces that build and read the tree of ``A + C``
"actions" (decision moves and chance outcomes) are private helpers of its ``policies`` module. This
module is the one place that imports them, so that a change of mctx's internals breaks one import
list, not the search; checked against mctx 0.0.71.

* ``StochasticRecurrentState``: the embedding of a node of the chance tree (``mctx._src.base``).
* ``make_stochastic_recurrent_fn``: the ``A + C`` "actions" recurrent function that dispatches to
  the decision or the chance function (``policies._make_stochastic_recurrent_fn``).
* ``make_stochastic_action_selection_fn``: the interior selection that picks a move at decision
  nodes and an outcome at chance nodes (``policies._make_stochastic_action_selection_fn``).
* ``mask_tree``: a tree cut to the children of one node type (``policies._mask_tree``).
* ``mask_invalid_actions``: logits with the invalid actions at ``-inf``, normalised
  (``policies._mask_invalid_actions``).
* ``masked_argmax``: the argmax over the valid actions (``action_selection.masked_argmax``).
* ``score_considered``: Sequential Halving's score of the considered actions
  (``seq_halving.score_considered``).

``tests/test_stochastic_gumbel.py`` runs every one of them through
:func:`mz_jax.mcts.chance_gumbel.gumbel_stochastic_muzero_policy` and checks the result against
mctx's public ``gumbel_muzero_policy``.
"""

from mctx._src.action_selection import masked_argmax
from mctx._src.base import StochasticRecurrentState
from mctx._src.policies import (
    _make_stochastic_action_selection_fn as make_stochastic_action_selection_fn,
)
from mctx._src.policies import _make_stochastic_recurrent_fn as make_stochastic_recurrent_fn
from mctx._src.policies import _mask_invalid_actions as mask_invalid_actions
from mctx._src.policies import _mask_tree as mask_tree
from mctx._src.seq_halving import score_considered

__all__ = [
    "StochasticRecurrentState",
    "make_stochastic_action_selection_fn",
    "make_stochastic_recurrent_fn",
    "mask_invalid_actions",
    "mask_tree",
    "masked_argmax",
    "score_considered",
]
