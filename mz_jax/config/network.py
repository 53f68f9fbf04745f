"""The network's configuration: which architecture :func:`mz_jax.build` makes, and its sizes.

A field of :class:`mz_jax.config.train.TrainConfig` (``--network.hidden-sizes 128 128``).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from mz_jax.core import validation


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The MuZero network (see :mod:`mz_jax.networks`)."""

    kind: Literal["auto", "mlp", "resnet"] = "auto"
    """'mlp' for vector observations, 'resnet' for image observations [H, W, C]; 'auto' picks by
    rank."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """MLP: widths of the hidden layers of each function."""
    latent_size: int = 64
    """MLP: size of the hidden state."""
    observation_layer_norm: bool = True
    """MLP: a LayerNorm after the representation's first layer; False leaves it out."""
    observation_scale: tuple[float, ...] | None = None
    """MLP: one factor per observation feature, applied before the representation's first layer;
    None: no scaling."""
    conv_channels: int | None = None
    """MLP on image observations: a 3x3 convolution with this many channels before the MLP; None
    flattens the frame."""
    channels: int = 32
    """ResNet: channels of every convolution."""
    num_blocks: int = 2
    """ResNet: residual blocks in each of the representation, dynamics and prediction functions."""
    downsample: bool = False
    """ResNet: downsample large images as in the MuZero Atari network (96x96 -> 6x6)."""
    value_support_size: int | None = None
    """S of the value support [-S, S]; None: the smallest S >= 10 that covers every return of the
    environment, or MuZero's 300 where it states no bound."""
    reward_support_size: int | None = None
    """S of the reward support [-S, S]; None: the smallest S >= 10 that covers the environment's
    rewards, or MuZero's 300 where it states no bound."""
    projection_size: int = 128
    """Width of the projection network and its head, built only with consistency_loss_weight > 0."""
    value_prefix_horizon: int | None = None
    """H: an LSTM predicts the value prefix, reset every H steps (EfficientZero §4.2); None: rewards
    (MuZero)."""
    lstm_size: int = 64
    """Width of the value-prefix LSTM (with value_prefix_horizon)."""
    predict_turn: bool | None = None
    """Predict whether the player who moved moves again (two-player games); None: where the
    environment can repeat a player."""
    num_chance_outcomes: int | None = None
    """C: Stochastic MuZero with C chance outcomes (afterstates, a chance encoder); None: MuZero's
    deterministic model."""
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    """The dtype of the network's matmuls, convolutions and hidden states ('bfloat16' for GPUs and
    TPUs); parameters, optimizer state, logits and the loss stay float32."""

    def __post_init__(self) -> None:
        validation.check_fields(
            self,
            prefix="network.",
            optional=("value_support_size", "reward_support_size", "predict_turn"),
        )
