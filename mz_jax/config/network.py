"""The network's configuration: which architecture :func:`mz_jax.training.build.build` makes, and its sizes.

A field of :class:`mz_jax.config.train.TrainConfig` (``--network.hidden-sizes 128 128``); it lives here,
beside the networks it describes, as :class:`mz_jax.config.search.SearchConfig` lives beside the search.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from mz_jax.core import validation


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The MuZero network (see :mod:`mz_jax.networks`)."""

    kind: Literal["auto", "mlp", "resnet"] = "auto"
    """'mlp' for vector observations, 'resnet' for image observations [H, W, C]; 'auto' picks by rank."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """MLP: widths of the hidden layers of each function."""
    latent_size: int = 64
    """MLP: size of the hidden state."""
    observation_layer_norm: bool = True
    """MLP: a LayerNorm after the representation's first layer, which reads the raw observation.
    That LayerNorm rescales each observation's features to the same size, so how large an
    observation is (how far the pole leans) reaches the network only through the layer's biases;
    False leaves it out (``Linear -> ReLU``). Low-dimensional vector observations learned faster
    without it in our runs (the cartpole_sample_efficient preset)."""
    observation_scale: tuple[float, ...] | None = None
    """MLP: None, or one factor per observation feature (of the flattened observation) that the
    representation multiplies the observation by before its first layer, so that features of very
    different sizes (CartPole's pole angle, a few hundredths of a radian, beside the cart's
    position, up to 2.4) move the first layer's output by similar amounts under Adam, whose steps
    are about the same size for every weight. Deterministic MuZero only."""
    conv_channels: int | None = None
    """MLP on image observations [H, W, C]: None flattens the frame into the representation MLP;
    C puts a 3x3 convolution with C channels and a ReLU before it (the MinAtar paper's DQN network:
    16 channels), whose features are shared by every position of the frame. Deterministic MuZero
    only."""
    channels: int = 32
    """ResNet: channels of every convolution."""
    num_blocks: int = 2
    """ResNet: residual blocks in each of the representation, dynamics and prediction functions."""
    downsample: bool = False
    """ResNet: downsample large images as in the MuZero Atari network (96x96 -> 6x6)."""
    value_support_size: int | None = None
    """S of the value support [-S, S] (2S+1 bins, in h-transformed units). None: the smallest S >= 10
    that represents every return the environment can give at this discount (reward bound times
    the discounted length of an episode); a set S that cannot is refused."""
    reward_support_size: int | None = None
    """S of the reward support [-S, S]. None: the smallest S >= 10 that represents the environment's
    largest reward (times value_prefix_horizon with a value prefix); a set S that cannot is refused."""
    projection_size: int = 128
    """Width of the projection network and its prediction head, built only when
    consistency_loss_weight > 0 (EfficientZero's self-supervised consistency loss)."""
    value_prefix_horizon: int | None = None
    """None: the reward heads predict each transition's reward (MuZero). H: an LSTM over the unrolled
    hidden states predicts the value prefix, the sum of rewards since it was last reset, every H
    steps of an unroll or of a search path (EfficientZero §4.2; 5 in the paper)."""
    lstm_size: int = 64
    """Width of the value-prefix LSTM (with value_prefix_horizon)."""
    predict_turn: bool | None = None
    """The prediction function also predicts whether the player who moved moves again, and the
    search reads who moves from it instead of alternating (two-player games only). None: True for
    environments where a player can move twice in a row (pgx backgammon: ``Env.repeats_player``),
    else False."""
    num_chance_outcomes: int | None = None
    """None: MuZero's deterministic model. C: Stochastic MuZero (Antonoglou et al., 2022) with C
    chance outcomes: afterstates, a distribution over the outcomes after each move, and an encoder
    of the observed outcome into one of C one-hot codes (:mod:`mz_jax.core.stochastic_loss`), as an MLP or a
    ResNet (``kind``), searched with either policy. Needs no value prefix; consistency_loss_weight > 0
    gives the chance code something to carry (the next state must match the observation that
    followed)."""

    def __post_init__(self) -> None:
        validation.check_fields(
            self,
            prefix="network.",
            optional=("value_support_size", "reward_support_size", "predict_turn"),
        )
