"""The search's configuration: :class:`SearchConfig`, what :func:`mz_jax.search` is asked to do.

A field of :class:`mz_jax.config.train.TrainConfig` (``--search.num-simulations 8``) and the
``config`` argument of :func:`mz_jax.search`.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from mz_jax.core import validation


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static settings of the search (:func:`mz_jax.search`); plain Python, never traced.

    One line a field here; docs/options.md has the details.
    """

    policy: Literal["gumbel", "muzero"] = "gumbel"
    """'gumbel' (Gumbel MuZero) or 'muzero' (pUCT with Dirichlet noise at the root)."""
    num_simulations: int = 16
    """Simulations per search."""
    discount: float | None = None
    """Per-step discount in (0, 1]; None in training (set from TrainConfig.discount); a direct
    search() call needs it."""
    two_player: bool | None = None
    """Alternating two-player zero-sum game; None in training (set from the environment); a direct
    search() call needs it."""
    dirichlet_alpha: float = 0.3
    """Concentration of the root Dirichlet noise (muzero policy)."""
    dirichlet_fraction: float = 0.25
    """Weight of the root Dirichlet noise, in [0, 1] (muzero policy)."""
    pb_c_init: float = 1.25
    """pUCT constant c1 (MuZero, Appendix B; muzero policy)."""
    pb_c_base: float = 19652.0
    """pUCT constant c2 (MuZero, Appendix B; muzero policy)."""
    max_depth: int | None = None
    """Most edges from the root to a leaf; None: no bound beyond num_simulations."""
    max_num_considered_actions: int = 16
    """Actions sampled at the root by Gumbel-Top-k (gumbel policy)."""
    gumbel_scale: float = 1.0
    """Scale of the root Gumbel noise; 0 searches deterministically (gumbel policy)."""
    value_scale: float = 0.1
    """c_scale of the completed-Q transform σ (gumbel policy, and the muzero policy's 'completed_q'
    target)."""
    maxvisit_init: float = 50.0
    """c_visit of the completed-Q transform σ (likewise)."""
    rescale_values: bool = True
    """Rescale completed Q-values to [0, 1] by their min and max before σ (likewise)."""
    rescale_min_range: float = 1e-8
    """With rescale_values: the smallest max - min the rescaling divides by (mctx's epsilon)."""
    value_bounds: tuple[float, float] | None = None
    """Known (min, max) of Q-values for pUCT's normalisation, e.g. (-1, 1) in board games; None:
    from the tree."""
    policy_target: Literal["visits", "completed_q"] = "visits"
    """The muzero policy's target: 'visits' (MuZero) or 'completed_q' (Gumbel MuZero's improved
    policy)."""

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
