"""The search's configuration: :class:`SearchConfig`, what :func:`mz_jax.search` is asked to do.

A field of :class:`mz_jax.config.train.TrainConfig` (``--search.num-simulations 8``) and the
``config`` argument of :func:`mz_jax.search`.
"""

from __future__ import annotations

import dataclasses

from mz_jax.core import validation


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static settings of the search; plain Python, never traced.

    Attributes:
      policy: ``"muzero"`` (pUCT with Dirichlet noise) or ``"gumbel"`` (Gumbel MuZero).
      num_simulations: simulations per search, at least 1.
      discount: per-step discount gamma in (0, 1]; mctx uses ``-discount`` per ply when
        ``two_player``. None in training: :func:`mz_jax.training.build` sets it to ``TrainConfig.discount``;
        a direct call of :func:`search` needs it set.
      two_player: alternating two-player zero-sum game (values flip sign between plies). None in
        training: :func:`mz_jax.training.build` sets it from the environment (a value that disagrees with
        the environment is an error); a direct call of :func:`search` needs it set.
      dirichlet_alpha: concentration of the root Dirichlet noise (muzero policy), > 0.
      dirichlet_fraction: weight of the root Dirichlet noise in [0, 1] (muzero policy).
      pb_c_init: pUCT constant c1 (MuZero Appendix B), >= 0 (muzero policy).
      pb_c_base: pUCT constant c2 (MuZero Appendix B), > 0 (muzero policy).
      max_depth: largest number of edges from the root to a leaf, >= 1, or None for no bound
        beyond ``num_simulations``; bounds the deep, slow trees an untrained network gives pUCT.
      max_num_considered_actions: at most this many actions are sampled at the root by Gumbel-Top-k,
        >= 1 (gumbel policy); an environment with fewer actions considers all of them.
      gumbel_scale: scale of the root Gumbel noise, >= 0; 0 searches deterministically (gumbel policy).
      value_scale: c_scale of the completed-Q transform sigma, > 0 (gumbel policy, and the muzero
        policy's ``"completed_q"`` target).
      maxvisit_init: c_visit of the completed-Q transform sigma, >= 0 (likewise).
      rescale_values: rescale completed Q-values to [0, 1] by their min and max before sigma
        (likewise).
      rescale_min_range: with ``rescale_values``, the smallest ``max - min`` the rescaling divides
        by (mctx's ``epsilon``; EfficientZero's ``value_delta_max`` plays this part in its min-max
        statistics), > 0. Where a node's completed Q-values differ by less, they are not stretched
        to [0, 1] but divided by this range, so an untrained network's noise of a few hundredths
        does not become a full-strength preference in sigma and in the policy target. The default
        1e-8 is mctx's and rescales every range; set it to about the smallest Q difference that
        should count in full (in return units).
      policy_target: the muzero policy's policy target: ``"visits"``, the root's visit distribution
        (MuZero), or ``"completed_q"``, Gumbel MuZero's improved policy computed on the pUCT tree,
        ``softmax(prior_logits + sigma(completed Q))`` over the legal actions (Danihelka et al.,
        2022, eq. 11), with the prior before Dirichlet noise and the unvisited actions' Q completed
        by the mixed value. With a few simulations and a confident prior, pUCT visits little beyond
        the prior's favourites, and a visit-count target hands the prior back to itself; the
        improved policy moves probability towards the actions whose Q is higher. The action played
        still follows the visit counts. The gumbel policy's target is always its improved policy.
      value_bounds: known ``(min, max)`` of Q-values, e.g. ``(-1.0, 1.0)`` for board games, to
        normalise Q in pUCT; None normalises by the parent's and siblings' values (muzero policy).
    """

    policy: str = "gumbel"
    num_simulations: int = 16
    discount: float | None = None
    two_player: bool | None = None
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    max_depth: int | None = None
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    value_scale: float = 0.1
    maxvisit_init: float = 50.0
    rescale_values: bool = True
    rescale_min_range: float = 1e-8
    value_bounds: tuple[float, float] | None = None
    policy_target: str = "visits"

    def __post_init__(self) -> None:
        validation.check_fields(self, prefix="search.", optional=("discount", "two_player"))
        # mctx asserts Python floats for the Dirichlet parameters; accept ints from the CLI too.
        for name in (
            "discount",
            "dirichlet_alpha",
            "dirichlet_fraction",
            "pb_c_init",
            "pb_c_base",
            "rescale_min_range",
        ):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, float(getattr(self, name)))
        if self.value_bounds is not None:
            object.__setattr__(self, "value_bounds", tuple(float(b) for b in self.value_bounds))
