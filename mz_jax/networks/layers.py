"""The NNX building blocks that the MLP and ResNet MuZero networks share.

A dense torso (``Linear -> LayerNorm -> ReLU`` per width), the 3x3 convolution and plane-wise
LayerNorm of the residual networks, AlphaZero's residual block and a tower of them, the convolutional
heads, the min-max scaling of hidden states to ``[0, 1]`` (MuZero Appendix G), and the two
opt-in parts of EfficientZero (Ye et al., 2021): the projection MLPs of the consistency loss and the
value-prefix LSTM head. Every normalisation is a LayerNorm: no module here holds state but its
parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from mz_jax.core.ops import min_max_normalize
from mz_jax.types import Array

ZEROS = nnx.initializers.zeros_init()
"""The initializer of the output layers (value, reward, policy), which start at zero."""


class DenseTorso(nnx.Module):
    """``Linear -> LayerNorm -> ReLU`` per hidden size: ``[B, D] -> [B, hidden_sizes[-1]]``.

    ``first_norm=False`` leaves out the first LayerNorm (``Linear -> ReLU``; no ``norm_0``
    parameters), for a torso that reads raw observations whose scale carries information."""

    def __init__(
        self,
        in_features: int,
        hidden_sizes: Sequence[int],
        *,
        dtype,
        rngs: nnx.Rngs,
        first_norm: bool = True,
    ):
        layers = {}
        for i, size in enumerate(hidden_sizes):
            layers[f"dense_{i}"] = nnx.Linear(in_features, size, dtype=dtype, rngs=rngs)
            # Built even when left out (and discarded), so that every later module draws the same
            # random numbers either way.
            norm = nnx.LayerNorm(size, dtype=dtype, rngs=rngs)
            if i > 0 or first_norm:
                layers[f"norm_{i}"] = norm
            in_features = size
        self.layers = nnx.Dict(layers)
        # Looked up by index, never in iteration order ("dense_10" sorts before "dense_2").
        self.depth = len(hidden_sizes)
        self.first_norm = first_norm

    def __call__(self, x: Array) -> Array:
        for i in range(self.depth):
            x = self.layers[f"dense_{i}"](x)
            if i > 0 or self.first_norm:
                x = self.layers[f"norm_{i}"](x)
            x = jax.nn.relu(x)
        return x


def plane_norm(channels: int, *, dtype, rngs: nnx.Rngs) -> nnx.LayerNorm:
    """A LayerNorm over each example's H, W and C, with a scale and bias per channel."""
    # Normalising over C alone leaves few numbers per position when channels are few (over two
    # channels it keeps only a sign, over one nothing).
    return nnx.LayerNorm(
        channels, reduction_axes=(-3, -2, -1), feature_axes=-1, dtype=dtype, rngs=rngs
    )


def conv3x3(
    in_channels: int, out_channels: int, *, stride: int = 1, dtype, rngs: nnx.Rngs
) -> nnx.Conv:
    """A 3x3 "SAME" convolution without bias."""
    # No bias: each of these convolutions feeds a LayerNorm, whose bias takes its place.
    return nnx.Conv(
        in_channels,
        out_channels,
        (3, 3),
        strides=(stride, stride),
        padding="SAME",
        use_bias=False,
        dtype=dtype,
        rngs=rngs,
    )


class ConvNormRelu(nnx.Module):
    """``conv -> LayerNorm -> ReLU``: ``[B, H, W, C_in] -> [B, ceil(H/s), ceil(W/s), C_out]``."""

    def __init__(self, in_channels: int, out_channels: int, *, stride: int = 1, dtype, rngs):
        self.conv = conv3x3(in_channels, out_channels, stride=stride, dtype=dtype, rngs=rngs)
        self.norm = plane_norm(out_channels, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array) -> Array:
        return jax.nn.relu(self.norm(self.conv(x)))


class ResidualBlock(nnx.Module):
    """AlphaZero's residual block with LayerNorm: ``relu(x + norm(conv(relu(norm(conv(x))))))``."""

    def __init__(self, channels: int, *, dtype, rngs: nnx.Rngs):
        self.conv_1 = conv3x3(channels, channels, dtype=dtype, rngs=rngs)
        self.norm_1 = plane_norm(channels, dtype=dtype, rngs=rngs)
        self.conv_2 = conv3x3(channels, channels, dtype=dtype, rngs=rngs)
        self.norm_2 = plane_norm(channels, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array) -> Array:
        y = jax.nn.relu(self.norm_1(self.conv_1(x)))
        return jax.nn.relu(x + self.norm_2(self.conv_2(y)))


class ResidualTower(nnx.Module):
    """``num_blocks`` residual blocks, ``[B, H, W, C] -> [B, H, W, C]`` (identity for 0 blocks)."""

    def __init__(self, channels: int, num_blocks: int, *, dtype, rngs: nnx.Rngs):
        blocks = {
            f"block_{i}": ResidualBlock(channels, dtype=dtype, rngs=rngs) for i in range(num_blocks)
        }
        self.blocks = nnx.Dict(blocks)
        self.num_blocks = num_blocks

    def __call__(self, x: Array) -> Array:
        for i in range(self.num_blocks):
            x = self.blocks[f"block_{i}"](x)
        return x


class ConvHead(nnx.Module):
    """1x1 conv, flatten, ``dense -> LayerNorm -> ReLU``, output: ``[B, h, w, C] -> [B, out]``."""

    def __init__(
        self, hidden_shape: tuple[int, int, int], head_channels: int, head_hidden: int, out: int,
        *, dtype, rngs: nnx.Rngs,
    ):  # fmt: skip
        height, width, channels = hidden_shape
        # The 1x1 conv is linear: a ReLU on these few planes (of non-negative inputs) can be dead
        # for every input from initialisation on, and a LayerNorm over them erases them when they
        # hold one number (AlphaZero's value head has one plane). The dense layer is nonlinear.
        self.conv = nnx.Conv(channels, head_channels, (1, 1), dtype=dtype, rngs=rngs)
        self.dense = nnx.Linear(height * width * head_channels, head_hidden, dtype=dtype, rngs=rngs)
        self.dense_norm = nnx.LayerNorm(head_hidden, dtype=dtype, rngs=rngs)
        self.out = nnx.Linear(head_hidden, out, kernel_init=ZEROS, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array) -> Array:
        x = self.conv(x).reshape(x.shape[0], -1)
        x = jax.nn.relu(self.dense_norm(self.dense(x)))
        return self.out(x).astype(jnp.float32)


class ProjectionMlp(nnx.Module):
    """``dense_1 -> norm_1 -> ReLU -> dense_2 (-> norm_2)``: ``[B, D] -> [B, out]``.

    With ``out_norm`` it is EfficientZero's projection network, without it the prediction head on
    top (Ye et al., 2021, §4.1, after SimSiam); EfficientZero's BatchNorm is a LayerNorm here.
    """

    def __init__(
        self, in_features: int, hidden: int, out: int, *, out_norm: bool, dtype, rngs: nnx.Rngs
    ):
        self.dense_1 = nnx.Linear(in_features, hidden, dtype=dtype, rngs=rngs)
        self.norm_1 = nnx.LayerNorm(hidden, dtype=dtype, rngs=rngs)
        self.dense_2 = nnx.Linear(hidden, out, dtype=dtype, rngs=rngs)
        self.norm_2 = nnx.LayerNorm(out, dtype=dtype, rngs=rngs) if out_norm else None

    def __call__(self, x: Array) -> Array:
        x = self.dense_2(jax.nn.relu(self.norm_1(self.dense_1(x))))
        if self.norm_2 is not None:
            x = self.norm_2(x)
        return x.astype(jnp.float32)


class ValuePrefixHead(nnx.Module):
    """EfficientZero's value-prefix head (Ye et al., 2021, §4.2): an LSTM over the unroll.

    ``(carry, x[B, D]) -> (new_carry, logits[B, bins])`` with ``carry = (c, h)``, each
    ``[B, lstm_size]`` float32, and ``logits = out(ReLU(norm(h')))``; ``out`` starts at zero.
    """

    def __init__(self, in_features: int, lstm_size: int, bins: int, *, dtype, rngs: nnx.Rngs):
        # Parameters dense_i/kernel [D, 4L], dense_h/kernel [L, 4L] and dense_h/bias [4L], the
        # gates in the order i, f, g, o.
        self.lstm = nnx.OptimizedLSTMCell(in_features, lstm_size, dtype=dtype, rngs=rngs)
        self.norm = nnx.LayerNorm(lstm_size, dtype=dtype, rngs=rngs)
        self.out = nnx.Linear(lstm_size, bins, kernel_init=ZEROS, dtype=dtype, rngs=rngs)
        self.lstm_size = lstm_size

    def zero_carry(self, batch: int) -> tuple[Array, Array]:
        """The carry at the start of a horizon: ``(c, h)``, zeros ``[batch, lstm_size]``."""
        zeros = jnp.zeros((batch, self.lstm_size), jnp.float32)
        return zeros, zeros

    def __call__(self, carry: tuple[Array, Array], x: Array) -> tuple[tuple[Array, Array], Array]:
        (c, h), _ = self.lstm(carry, x)
        # The carry stays float32 in any computation dtype: it sums over the whole horizon.
        c, h = c.astype(jnp.float32), h.astype(jnp.float32)
        logits = self.out(jax.nn.relu(self.norm(h.astype(x.dtype))))
        return (c, h), logits.astype(jnp.float32)


class EfficientZeroParts:
    """The optional EfficientZero parts of a MuZero module, shared by the MLP and the ResNet.

    :meth:`add_efficientzero_parts` creates them (call it after every other submodule, so that the
    others draw the same random numbers with and without them): the projection network and its
    prediction head of the consistency loss (§4.1), and the value-prefix head (§4.2), whose
    presence makes the hidden state a pair ``(state, reward_carry)``. :meth:`add_turn_head`, called
    after it, adds the optional turn prediction of games where a player can move twice in a row.
    """

    projection: ProjectionMlp | None
    projection_head: ProjectionMlp | None
    value_prefix_head: ValuePrefixHead | None
    turn_head: nnx.Module | None

    def add_efficientzero_parts(
        self,
        *,
        reward_head: nnx.Module,
        state_size: int,
        features_size: int,
        projection_size: int | None,
        value_prefix: int | None,
        reward_bins: int,
        dtype,
        rngs: nnx.Rngs,
    ) -> None:
        """Call last in ``__init__``, so that every module built before draws the same random
        numbers with these parts as without them. ``reward_head``: the per-step reward head, built
        either way (the same draws) and kept only without a value prefix; ``state_size``: the
        flattened hidden state's size (the projection's input); ``features_size``: the size of the
        features the value-prefix LSTM reads; ``value_prefix``: None, or the LSTM's size. The
        projection is ``P -> P`` wide with a LayerNorm on its output, the head has a bottleneck of
        ``max(P // 2, 1)`` units (Ye et al., 2021, §4.1)."""
        # Each attribute is assigned once: nnx makes an attribute first set to None static.
        self.reward_head = reward_head if value_prefix is None else None
        p, kw = projection_size, dict(dtype=dtype, rngs=rngs)
        self.projection = (
            None if p is None else ProjectionMlp(state_size, p, p, out_norm=True, **kw)
        )
        self.projection_head = (
            None if p is None else ProjectionMlp(p, max(p // 2, 1), p, out_norm=False, **kw)
        )
        self.value_prefix_head = (
            None
            if value_prefix is None
            else ValuePrefixHead(features_size, value_prefix, reward_bins, dtype=dtype, rngs=rngs)
        )

    def add_turn_head(self, head: nnx.Module | None) -> None:
        """Call after :meth:`add_efficientzero_parts`: ``head`` (None: no turn prediction) maps a
        state to one logit, that the player who moved moves again
        (:attr:`mz_jax.types.MuZeroNetwork.turn_logits`)."""
        self.turn_head = head

    def turn_logits(self, hidden: Any) -> Array:
        """``[B]`` float32 turn logits of a hidden state."""
        return self.turn_head(self.state_of(hidden))[:, 0].astype(jnp.float32)

    def state_of(self, hidden: Any) -> Array:
        """The state part of a hidden state (all of it, but for a value-prefix network)."""
        return hidden if self.value_prefix_head is None else hidden[0]

    def hidden_at_root(self, state: Array) -> Any:
        """The hidden state of a root whose state is ``state``: with a zero carry for a
        value-prefix network."""
        if self.value_prefix_head is None:
            return state
        return state, self.value_prefix_head.zero_carry(state.shape[0])

    def project(self, hidden: Any) -> Array:
        state = self.state_of(hidden)
        return self.projection(state.reshape(state.shape[0], -1))

    def predict_projection(self, projection: Array) -> Array:
        return self.projection_head(projection)


def normalize_hidden(x: Array) -> Array:
    """Min-max scales each example's hidden state to ``[0, 1]`` (MuZero Appendix G)."""
    # The range is taken in float32: in bf16, max - min loses most digits of a small range.
    return min_max_normalize(x.astype(jnp.float32)).astype(x.dtype)
