"""Stochastic MuZero's training settings: :class:`StochasticConfig`, a field of
:class:`~mz_jax.TrainConfig` (``--stochastic.chance-codes environment``).

They are read only where the network has chance outcomes (``network.num_chance_outcomes``, which
makes the model Stochastic MuZero's; Antonoglou et al., 2022); a deterministic run ignores them.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from mz_jax.core import validation


@dataclasses.dataclass(frozen=True)
class StochasticConfig:
    """The loss settings of Stochastic MuZero (:func:`mz_jax.make_stochastic_loss_fn`)."""

    commitment_loss_weight: float = 0.0
    """β of the chance encoder's commitment term ||sg(c) - c^e||^2 (VQ-VAE uses 0.25)."""
    code_usage_weight: float = 0.0
    """Weight of a bonus on the entropy of a batch's chance codes (not in the paper); 0: off."""
    chance_straight_through: Literal["softmax", "logits"] = "softmax"
    """What the chance code's straight-through gradient reaches: the encoder's 'softmax' or its
    'logits'."""
    chance_codes: Literal["learned", "environment"] = "learned"
    """'learned': the paper's chance encoder; 'environment': the outcome the environment names (pgx
    2048, backgammon)."""

    def __post_init__(self) -> None:
        validation.check_fields(self, prefix="stochastic.")
