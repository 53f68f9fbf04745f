"""MuZero networks in Flax NNX, as the pure functions of :class:`mz_jax.types.MuZeroNetwork`.

Two families follow the MuZero paper (Schrittwieser et al., 2020, Appendix F):

* :func:`make_mlp_network` for vector observations (any observation is flattened), with a latent
  vector as hidden state;
* :func:`make_resnet_network` for image observations ``[B, H, W, C]`` (NHWC): an AlphaZero-style
  residual tower, with the Atari downsampling stem on request and the action encoded as planes.

Both scale the hidden state of every example to ``[0, 1]`` (Appendix G), predict value and reward as
logits over the categorical support ``[-S, S]`` (Appendix F), and start with zero-initialised output
layers. Normalisation is LayerNorm, never BatchNorm: the networks hold no state but their
parameters, so the examples of a batch do not interact and the functions are pure.

Each factory defines the NNX module, keeps its ``nnx.split`` graph definition, initialises it in one
compiled program and returns its parameters as a plain nested ``dict`` of float32 arrays (string
keys, ``nnx.Param`` values only), which ``jax.grad``, optax and orbax take like any pytree. The
returned functions ``nnx.merge`` the graph with the given parameters at trace time, so they run
under plain ``jax.jit``, ``jax.grad``, ``jax.vmap`` and ``jax.lax.scan``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mz_jax.ops import min_max_normalize
from mz_jax.types import Array, ModelOutput, MuZeroNetwork

Params = dict[str, Any]
"""A nested ``dict`` (string keys) of the networks' ``nnx.Param`` arrays."""

_ZEROS = nnx.initializers.zeros_init()


# ------------------------------------------------------------------------------------------------
# Building blocks.


class _DenseTorso(nnx.Module):
    """``Linear -> LayerNorm -> ReLU`` per hidden size: ``[B, D] -> [B, hidden_sizes[-1]]``."""

    def __init__(self, in_features: int, hidden_sizes: Sequence[int], *, dtype, rngs: nnx.Rngs):
        layers = {}
        for i, size in enumerate(hidden_sizes):
            layers[f"dense_{i}"] = nnx.Linear(in_features, size, dtype=dtype, rngs=rngs)
            layers[f"norm_{i}"] = nnx.LayerNorm(size, dtype=dtype, rngs=rngs)
            in_features = size
        self.layers = nnx.Dict(layers)
        # Looked up by index, never in iteration order ("dense_10" sorts before "dense_2").
        self.depth = len(hidden_sizes)

    def __call__(self, x: Array) -> Array:
        for i in range(self.depth):
            x = jax.nn.relu(self.layers[f"norm_{i}"](self.layers[f"dense_{i}"](x)))
        return x


def _plane_norm(channels: int, *, dtype, rngs: nnx.Rngs) -> nnx.LayerNorm:
    # LayerNorm over all of H, W and C of each example, with a scale and bias per channel.
    # Normalising over C alone leaves few numbers per position when channels are few (over two
    # channels it keeps only a sign, over one nothing).
    return nnx.LayerNorm(
        channels, reduction_axes=(-3, -2, -1), feature_axes=-1, dtype=dtype, rngs=rngs
    )


def _conv(in_channels: int, out_channels: int, *, stride: int = 1, dtype, rngs) -> nnx.Conv:
    # No bias: each of these 3x3 convolutions feeds a LayerNorm, whose bias takes its place.
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


class _ConvNormRelu(nnx.Module):
    """``conv -> LayerNorm -> ReLU``: ``[B, H, W, C_in] -> [B, ceil(H/s), ceil(W/s), C_out]``."""

    def __init__(self, in_channels: int, out_channels: int, *, stride: int = 1, dtype, rngs):
        self.conv = _conv(in_channels, out_channels, stride=stride, dtype=dtype, rngs=rngs)
        self.norm = _plane_norm(out_channels, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array) -> Array:
        return jax.nn.relu(self.norm(self.conv(x)))


class _ResidualBlock(nnx.Module):
    """AlphaZero's residual block with LayerNorm: ``relu(x + norm(conv(relu(norm(conv(x))))))``."""

    def __init__(self, channels: int, *, dtype, rngs: nnx.Rngs):
        self.conv_1 = _conv(channels, channels, dtype=dtype, rngs=rngs)
        self.norm_1 = _plane_norm(channels, dtype=dtype, rngs=rngs)
        self.conv_2 = _conv(channels, channels, dtype=dtype, rngs=rngs)
        self.norm_2 = _plane_norm(channels, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array) -> Array:
        y = jax.nn.relu(self.norm_1(self.conv_1(x)))
        return jax.nn.relu(x + self.norm_2(self.conv_2(y)))


class _ResidualTower(nnx.Module):
    """``num_blocks`` residual blocks, ``[B, H, W, C] -> [B, H, W, C]`` (identity for 0 blocks)."""

    def __init__(self, channels: int, num_blocks: int, *, dtype, rngs: nnx.Rngs):
        blocks = {
            f"block_{i}": _ResidualBlock(channels, dtype=dtype, rngs=rngs)
            for i in range(num_blocks)
        }
        self.blocks = nnx.Dict(blocks)
        self.num_blocks = num_blocks

    def __call__(self, x: Array) -> Array:
        for i in range(self.num_blocks):
            x = self.blocks[f"block_{i}"](x)
        return x


class _ConvHead(nnx.Module):
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
        self.out = nnx.Linear(head_hidden, out, kernel_init=_ZEROS, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array) -> Array:
        x = self.conv(x).reshape(x.shape[0], -1)
        x = jax.nn.relu(self.dense_norm(self.dense(x)))
        return self.out(x).astype(jnp.float32)


def _normalize_hidden(x: Array) -> Array:
    # The range is taken in float32: in bf16, max - min loses most digits of a small range.
    return min_max_normalize(x.astype(jnp.float32)).astype(x.dtype)


# ------------------------------------------------------------------------------------------------
# The MLP network.


class _MlpMuZero(nnx.Module):
    """Representation, dynamics and prediction MLPs over a latent vector ``[B, latent_size]``."""

    def __init__(
        self,
        *,
        observation_size: int,
        num_actions: int,
        hidden_sizes: Sequence[int],
        latent_size: int,
        value_bins: int,
        reward_bins: int,
        dtype,
        rngs: nnx.Rngs,
    ):
        last = hidden_sizes[-1]
        dense = lambda n_in, n_out, **kw: nnx.Linear(n_in, n_out, dtype=dtype, rngs=rngs, **kw)
        self.representation = _DenseTorso(observation_size, hidden_sizes, dtype=dtype, rngs=rngs)
        self.representation_out = dense(last, latent_size)
        self.dynamics = _DenseTorso(latent_size + num_actions, hidden_sizes, dtype=dtype, rngs=rngs)
        self.dynamics_out = dense(last, latent_size)
        self.prediction = _DenseTorso(latent_size, hidden_sizes, dtype=dtype, rngs=rngs)
        # Zero-initialised output layers: at initialisation every state has value 0, reward 0 and a
        # uniform prior, so the first searches follow visit counts rather than the noise of an
        # untrained network (common MuZero practice, e.g. EfficientZero).
        self.reward_head = dense(last, reward_bins, kernel_init=_ZEROS)
        self.value_head = dense(last, value_bins, kernel_init=_ZEROS)
        self.policy_head = dense(last, num_actions, kernel_init=_ZEROS)
        self.num_actions = num_actions
        self.reward_bins = reward_bins
        self.dtype = dtype

    def _predict(self, hidden: Array, reward_logits: Array) -> ModelOutput:
        x = self.prediction(hidden)
        return ModelOutput(
            value_logits=self.value_head(x).astype(jnp.float32),
            reward_logits=reward_logits,
            policy_logits=self.policy_head(x).astype(jnp.float32),
        )

    def initial_inference(self, observation: Array) -> tuple[ModelOutput, Array]:
        x = observation.reshape(observation.shape[0], -1).astype(self.dtype)
        hidden = _normalize_hidden(self.representation_out(self.representation(x)))
        # The root has no incoming transition: zero reward logits, which the loss does not train.
        reward_logits = jnp.zeros((hidden.shape[0], self.reward_bins), jnp.float32)
        return self._predict(hidden, reward_logits), hidden

    def recurrent_inference(self, hidden: Array, action: Array) -> tuple[ModelOutput, Array]:
        action_one_hot = jax.nn.one_hot(action, self.num_actions, dtype=hidden.dtype)
        x = self.dynamics(jnp.concatenate([hidden, action_one_hot], axis=-1))
        next_hidden = _normalize_hidden(self.dynamics_out(x))
        reward_logits = self.reward_head(x).astype(jnp.float32)
        return self._predict(next_hidden, reward_logits), next_hidden


def make_mlp_network(
    key: jax.Array | int,
    *,
    observation_shape: Sequence[int],
    num_actions: int,
    hidden_sizes: Sequence[int] = (64, 64),
    latent_size: int = 64,
    value_support_size: int = 10,
    reward_support_size: int = 10,
    dtype: Any = jnp.float32,
) -> tuple[MuZeroNetwork, Params]:
    """A MuZero network of MLPs for vector observations (MuZero Appendix F, with dense layers).

    * representation: ``observation[B, *observation_shape]``, flattened,
      ``-> hidden[B, latent_size]``;
    * dynamics: ``concat(hidden, one_hot(action))[B, latent_size + A] ->`` the next hidden state and
      ``reward_logits[B, 2 * reward_support_size + 1]``, both from one shared MLP;
    * prediction: ``hidden -> value_logits[B, 2 * value_support_size + 1], policy_logits[B, A]``.

    Every MLP is ``Linear -> LayerNorm -> ReLU`` per entry of ``hidden_sizes``. Hidden states are
    min-max scaled to ``[0, 1]`` per example (Appendix G), the range of the one-hot action input.
    The reward, value and policy output layers start at zero. The root's ``reward_logits`` (from
    ``initial_inference``) are zeros.

    Args:
      key: a JAX PRNG key (or an int seed) for parameter initialisation.
      observation_shape: the shape of one observation, without the batch axis; flattened.
      num_actions: the number of actions A (>= 1).
      hidden_sizes: widths of the hidden layers of each MLP (at least one layer).
      latent_size: the size of the hidden state (>= 2: min-max scaling maps one number to 0).
      value_support_size: S of the value support ``[-S, S]`` (>= 1).
      reward_support_size: S of the reward support (>= 1).
      dtype: the computation dtype (e.g. ``jnp.bfloat16``); parameters and logits stay float32,
        the hidden state has this dtype.

    Returns:
      ``(network, params)``: the pure functions and a nested ``dict`` of float32 parameter arrays.
      An action outside ``[0, A)`` is encoded as an all-zero one-hot vector (no error under jit).
    """
    observation_shape = _check_shape("observation_shape", observation_shape)
    _check_int("num_actions", num_actions, minimum=1)
    hidden_sizes = tuple(hidden_sizes)
    if not hidden_sizes or not all(_is_int(s) and s >= 1 for s in hidden_sizes):
        raise ValueError(
            f"hidden_sizes must be a non-empty sequence of integers >= 1; got {hidden_sizes!r}"
        )
    _check_int("latent_size", latent_size, minimum=2)
    _check_int("value_support_size", value_support_size, minimum=1)
    _check_int("reward_support_size", reward_support_size, minimum=1)
    _check_dtype(dtype)
    build = lambda rngs: _MlpMuZero(
        observation_size=math.prod(observation_shape),
        num_actions=num_actions,
        hidden_sizes=hidden_sizes,
        latent_size=latent_size,
        value_bins=2 * value_support_size + 1,
        reward_bins=2 * reward_support_size + 1,
        dtype=dtype,
        rngs=rngs,
    )
    return _as_pure_functions(
        build, key, observation_shape=observation_shape, hidden_shape=(latent_size,)
    )


# ------------------------------------------------------------------------------------------------
# The ResNet network.


def _downsampled_size(size: int) -> int:
    # Two stride-2 convolutions and two stride-2 average poolings, all "SAME": each maps n to
    # ceil(n / 2), and nested ceilings compose, so 96 -> 48 -> 24 -> 12 -> 6, i.e. ceil(n / 16).
    return -(-size // 16)


class _ResNetMuZero(nnx.Module):
    """Residual representation, dynamics and prediction over hidden planes ``[B, h, w, C]``."""

    def __init__(
        self,
        *,
        observation_shape: tuple[int, int, int],
        hidden_shape: tuple[int, int, int],
        num_actions: int,
        num_blocks: int,
        downsample: bool,
        prediction_blocks: int,
        head_channels: int,
        head_hidden: int,
        value_bins: int,
        reward_bins: int,
        dtype,
        rngs: nnx.Rngs,
    ):
        in_channels, channels = observation_shape[-1], hidden_shape[-1]
        kw = dict(dtype=dtype, rngs=rngs)
        if downsample:
            # MuZero Appendix F (Atari): a stride-2 conv to half the planes, residual blocks, a
            # stride-2 conv, residual blocks, stride-2 average pooling, residual blocks, stride-2
            # average pooling. The paper has 2, 3 and 3 blocks at these stages; one each is cheaper.
            half = max(channels // 2, 1)
            stem = {
                "conv_1": _ConvNormRelu(in_channels, half, stride=2, **kw),
                "block_1": _ResidualBlock(half, **kw),
                "conv_2": _ConvNormRelu(half, channels, stride=2, **kw),
                "block_2": _ResidualBlock(channels, **kw),
                "block_3": _ResidualBlock(channels, **kw),
            }
        else:
            stem = {"conv": _ConvNormRelu(in_channels, channels, **kw)}
        self.stem = nnx.Dict(stem)
        self.downsample = downsample
        self.representation = _ResidualTower(channels, num_blocks, **kw)

        self.dynamics_conv = _conv(channels + num_actions, channels, **kw)
        self.dynamics_norm = _plane_norm(channels, **kw)
        self.dynamics = _ResidualTower(channels, num_blocks, **kw)

        self.prediction = _ResidualTower(channels, prediction_blocks, **kw)
        # Zero-initialised output layers (the heads' "out"): at initialisation every state has value
        # 0, reward 0 and a uniform prior, so the first searches follow visit counts rather than
        # the noise of an untrained network (common MuZero practice, e.g. EfficientZero).
        head = (hidden_shape, head_channels, head_hidden)
        self.reward_head = _ConvHead(*head, reward_bins, **kw)
        self.value_head = _ConvHead(*head, value_bins, **kw)
        self.policy_head = _ConvHead(*head, num_actions, **kw)
        self.num_actions = num_actions
        self.reward_bins = reward_bins
        self.dtype = dtype

    def _stem(self, x: Array) -> Array:
        if not self.downsample:
            return self.stem["conv"](x)
        pool = lambda y: nnx.avg_pool(
            y, (3, 3), strides=(2, 2), padding="SAME", count_include_pad=False
        )
        x = self.stem["block_1"](self.stem["conv_1"](x))
        x = self.stem["block_2"](self.stem["conv_2"](x))
        x = self.stem["block_3"](pool(x))
        return pool(x)

    def _predict(self, hidden: Array, reward_logits: Array) -> ModelOutput:
        x = self.prediction(hidden)
        return ModelOutput(
            value_logits=self.value_head(x),
            reward_logits=reward_logits,
            policy_logits=self.policy_head(x),
        )

    def initial_inference(self, observation: Array) -> tuple[ModelOutput, Array]:
        hidden = _normalize_hidden(self.representation(self._stem(observation.astype(self.dtype))))
        # The root has no incoming transition: zero reward logits, which the loss does not train.
        reward_logits = jnp.zeros((hidden.shape[0], self.reward_bins), jnp.float32)
        return self._predict(hidden, reward_logits), hidden

    def recurrent_inference(self, hidden: Array, action: Array) -> tuple[ModelOutput, Array]:
        # MuZero Appendix F: the action enters as planes of the hidden state's spatial size, one per
        # action, all ones for the action taken and all zeros for the others.
        planes = jax.nn.one_hot(action, self.num_actions, dtype=hidden.dtype)[:, None, None, :]
        planes = jnp.broadcast_to(planes, (*hidden.shape[:-1], self.num_actions))
        x = self.dynamics_conv(jnp.concatenate([hidden, planes], axis=-1))
        # A skip connection from the incoming state: the dynamics start close to the identity.
        x = self.dynamics(jax.nn.relu(hidden + self.dynamics_norm(x)))
        next_hidden = _normalize_hidden(x)
        return self._predict(next_hidden, self.reward_head(x)), next_hidden


def make_resnet_network(
    key: jax.Array | int,
    *,
    observation_shape: Sequence[int],
    num_actions: int,
    channels: int = 32,
    num_blocks: int = 2,
    downsample: bool = False,
    prediction_blocks: int = 1,
    head_channels: int = 4,
    head_hidden: int = 32,
    value_support_size: int = 10,
    reward_support_size: int = 10,
    dtype: Any = jnp.float32,
) -> tuple[MuZeroNetwork, Params]:
    """An AlphaZero-style residual MuZero network for images ``[B, H, W, C]`` (MuZero Appendix F).

    * representation: a 3x3 ``conv -> LayerNorm -> ReLU`` stem (or, with ``downsample``, the Atari
      stem below) and ``num_blocks`` residual blocks ``-> hidden[B, h, w, channels]``;
    * dynamics: ``concat(hidden, action planes)[B, h, w, channels + A]``, a 3x3 conv with a skip
      connection from ``hidden``, and ``num_blocks`` residual blocks; the next hidden state and
      ``reward_logits[B, 2 * reward_support_size + 1]`` both come from this output;
    * prediction: ``prediction_blocks`` residual blocks, then a value head
      ``-> value_logits[B, 2 * value_support_size + 1]`` and a policy head
      ``-> policy_logits[B, A]``.

    A residual block is ``relu(x + norm(conv(relu(norm(conv(x))))))`` with 3x3 convolutions and a
    LayerNorm over each example's H, W and C (with a scale and bias per channel). The reward, value
    and policy heads are each a linear 1x1 conv to ``head_channels`` planes, a
    ``dense -> LayerNorm -> ReLU`` layer of ``head_hidden`` units and an output layer that starts at
    zero. Hidden states are min-max scaled to ``[0, 1]`` per example over all of ``h, w, channels``
    (Appendix G), the range of the action planes. The root's ``reward_logits`` are zeros.

    The hidden state's spatial size is ``h, w = H, W`` without downsampling. With ``downsample``
    (Appendix F, Atari: 96x96 -> 6x6) the stem is a stride-2 conv to ``channels // 2`` planes, a
    residual block, a stride-2 conv to ``channels`` planes, a residual block, a stride-2 3x3
    average pooling, a residual block and another such pooling. Each step maps a size n to
    ``ceil(n / 2)`` ("SAME" padding), so ``h, w = ceil(H / 16), ceil(W / 16)``: 96 -> 6, 32 -> 2,
    10 -> 1.

    Args:
      key: a JAX PRNG key (or an int seed) for parameter initialisation.
      observation_shape: ``(H, W, C)`` of one observation, channels last. Observations of any dtype
        (bool, uint8, float) are cast to ``dtype``; rescaling pixels is left to the environment.
      num_actions: the number of actions A (>= 1), one input plane each in the dynamics.
      channels: planes of the hidden state and of the residual blocks (>= 1; the hidden state
        ``[h, w, channels]`` must hold at least 2 numbers).
      num_blocks: residual blocks in the representation tower and in the dynamics tower (>= 0).
      downsample: use the Atari downsampling stem described above.
      prediction_blocks: residual blocks before the value and policy heads (>= 0).
      head_channels: planes of each head's 1x1 conv (>= 1).
      head_hidden: units of each head's hidden dense layer (>= 1).
      value_support_size: S of the value support ``[-S, S]`` (>= 1).
      reward_support_size: S of the reward support (>= 1).
      dtype: the computation dtype (e.g. ``jnp.bfloat16``); parameters and logits stay float32,
        the hidden state has this dtype.

    Returns:
      ``(network, params)``: the pure functions and a nested ``dict`` of float32 parameter arrays.
      An action outside ``[0, A)`` is encoded as all-zero planes (no error under jit).
    """
    observation_shape = _check_shape("observation_shape", observation_shape, rank=3)
    _check_int("num_actions", num_actions, minimum=1)
    _check_int("channels", channels, minimum=1)
    _check_int("num_blocks", num_blocks, minimum=0)
    if not isinstance(downsample, bool | np.bool_):
        raise ValueError(f"downsample must be a bool; got {downsample!r}")
    _check_int("prediction_blocks", prediction_blocks, minimum=0)
    _check_int("head_channels", head_channels, minimum=1)
    _check_int("head_hidden", head_hidden, minimum=1)
    _check_int("value_support_size", value_support_size, minimum=1)
    _check_int("reward_support_size", reward_support_size, minimum=1)
    _check_dtype(dtype)
    height, width, _ = observation_shape
    if downsample:
        height, width = _downsampled_size(height), _downsampled_size(width)
    hidden_shape = (height, width, channels)
    if math.prod(hidden_shape) < 2:
        raise ValueError(
            f"channels must be >= 2 here: the hidden state [h, w, channels] = {list(hidden_shape)} "
            f"(observation_shape {observation_shape}, downsample={downsample}) must hold at least "
            "2 numbers, since min-max scaling maps a single number to 0"
        )
    build = lambda rngs: _ResNetMuZero(
        observation_shape=observation_shape,
        hidden_shape=hidden_shape,
        num_actions=num_actions,
        num_blocks=num_blocks,
        downsample=bool(downsample),
        prediction_blocks=prediction_blocks,
        head_channels=head_channels,
        head_hidden=head_hidden,
        value_bins=2 * value_support_size + 1,
        reward_bins=2 * reward_support_size + 1,
        dtype=dtype,
        rngs=rngs,
    )
    return _as_pure_functions(
        build, key, observation_shape=observation_shape, hidden_shape=hidden_shape
    )


# ------------------------------------------------------------------------------------------------
# From a module to pure functions; helpers.


def _as_pure_functions(
    build: Callable[[nnx.Rngs], nnx.Module],
    key: jax.Array | int,
    *,
    observation_shape: tuple[int, ...],
    hidden_shape: tuple[int, ...],
) -> tuple[MuZeroNetwork, Params]:
    key = _check_key(key)
    # One filter, nnx.Param: nnx.split raises if the module holds any other state (batch
    # statistics, RNG counters), which would make the functions below impure.
    graphdef, _ = nnx.split(nnx.eval_shape(lambda: build(nnx.Rngs(key))), nnx.Param)

    # One compiled program draws every initial parameter; eagerly, each initializer would be
    # compiled and dispatched on its own.
    @jax.jit
    def init(key: jax.Array) -> Params:
        return nnx.to_pure_dict(nnx.split(build(nnx.Rngs(key)), nnx.Param)[1])

    def initial_inference(params: Params, observation: Array) -> tuple[ModelOutput, Array]:
        _check_array_shape("observation", observation, observation_shape)
        return nnx.merge(graphdef, params).initial_inference(observation)

    def recurrent_inference(
        params: Params, hidden: Array, action: Array
    ) -> tuple[ModelOutput, Array]:
        _check_array_shape("hidden", hidden, hidden_shape)
        if action.shape != hidden.shape[:1] or not jnp.issubdtype(action.dtype, jnp.integer):
            raise ValueError(
                f"action must be an integer array of shape [B] = {list(hidden.shape[:1])}; "
                f"got {action.dtype}{list(action.shape)}"
            )
        return nnx.merge(graphdef, params).recurrent_inference(hidden, action)

    return MuZeroNetwork(initial_inference, recurrent_inference), init(key)


def count_params(params: Any) -> int:
    """The number of scalars in a pytree of arrays (or of ``jax.ShapeDtypeStruct``)."""
    leaves = jax.tree.leaves(params)
    return sum(math.prod(x.shape if hasattr(x, "shape") else np.shape(x)) for x in leaves)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")


def _check_shape(name: str, shape: Any, *, rank: int | None = None) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if (
        dims is None
        or (rank is not None and len(dims) != rank)
        or not all(_is_int(d) and d >= 1 for d in dims)
    ):
        allowed = "(H, W, C), channels last," if rank == 3 else "a tuple"
        raise ValueError(f"{name} must be {allowed} of positive integers; got {shape!r}")
    return tuple(int(d) for d in dims)


def _check_dtype(dtype: Any) -> None:
    try:
        floating = jnp.issubdtype(jnp.dtype(dtype), jnp.floating)
    except TypeError:
        floating = False
    if not floating:
        raise ValueError(
            f"dtype must be a floating dtype (jnp.float32, jnp.bfloat16); got {dtype!r}"
        )


def _check_key(key: Any) -> jax.Array:
    if _is_int(key):
        return jax.random.key(key)
    if isinstance(key, jax.Array):
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and key.shape == ():
            return key
        if key.dtype == jnp.uint32 and key.shape == (2,):  # a legacy jax.random.PRNGKey
            return key
    raise ValueError(f"key must be one JAX PRNG key (jax.random.key) or an int seed; got {key!r}")


def _check_array_shape(name: str, x: Array, shape: tuple[int, ...]) -> None:
    # Shapes are static, so this raises at trace time, under jit too.
    if x.ndim != len(shape) + 1 or x.shape[1:] != shape:
        expected = ", ".join(["B", *map(str, shape)])
        raise ValueError(f"{name} must have shape [{expected}]; got {list(x.shape)}")
