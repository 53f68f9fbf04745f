"""Search on a learned model with mctx: :func:`search` (MuZero and Gumbel MuZero, with chance nodes
for Stochastic MuZero), Sampled MuZero's search over K sampled actions a node
(:func:`mz_jax.mcts.sampled.sampled_search`), the model as mctx's ``root_fn`` and ``recurrent_fn``,
and the MCTS baseline that searches the true game of a board environment (``mcts:N``).

Named ``mcts`` because ``mz_jax.search`` is the search function itself.
"""

from mz_jax.mcts import baseline, chance_gumbel, model, policies, sampled
from mz_jax.mcts.policies import SearchOutput, search, search_with_tree

__all__ = [
    "SearchOutput",
    "baseline",
    "chance_gumbel",
    "model",
    "policies",
    "sampled",
    "search",
    "search_with_tree",
]
