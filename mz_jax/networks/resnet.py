"""The residual MuZero network for image observations (MuZero Appendix F).

An AlphaZero-style residual tower over hidden planes ``[B, h, w, C]`` (NHWC), with the Atari
downsampling stem on request (96x96 -> 6x6) and the action encoded as planes. EfficientZero's
projection and value-prefix head are opt-in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from mz_jax.core import validation
from mz_jax.networks.layers import (
    ConvHead,
    ConvNormRelu,
    EfficientZeroParts,
    ResidualBlock,
    ResidualTower,
    conv3x3,
    normalize_hidden,
    plane_norm,
)
from mz_jax.networks.pure import Params, as_pure_functions, check_dtype, check_shape
from mz_jax.types import Array, ModelOutput, MuZeroNetwork


def _downsampled_size(size: int) -> int:
    # Two stride-2 convolutions and two stride-2 average poolings, all "SAME": each maps n to
    # ceil(n / 2), and nested ceilings compose, so 96 -> 48 -> 24 -> 12 -> 6, i.e. ceil(n / 16).
    return -(-size // 16)


def hidden_shape_for(
    observation_shape: tuple[int, int, int], channels: int, downsample: bool
) -> tuple[int, int, int]:
    """The hidden state's shape ``(h, w, channels)`` for observations ``(H, W, C)``; raises
    ``ValueError`` (naming ``channels``) where it would hold fewer than 2 numbers."""
    height, width, _ = observation_shape
    if downsample:
        height, width = _downsampled_size(height), _downsampled_size(width)
    hidden_shape = (height, width, channels)
    if math.prod(hidden_shape) < 2:
        validation.fail(
            "channels",
            channels,
            f"an integer >= 2 here: the hidden state [h, w, channels] = {list(hidden_shape)} "
            f"(observation_shape {observation_shape}, downsample={downsample}) must hold at least "
            "2 numbers, since min-max scaling maps a single number to 0",
            kind="argument",
        )
    return hidden_shape


def check_resnet_arguments(
    *,
    observation_shape: Sequence[int],
    dtype: Any,
    projection_size: int | None,
    channels: int,
    downsample: bool,
    **arguments: Any,
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Checks the arguments every residual network shares (``observation_shape`` of rank 3,
    ``dtype``, an optional ``projection_size``, ``channels``, ``downsample`` and the integer or
    boolean ``arguments`` by their names) and returns ``(observation_shape, hidden_shape)``.

    Raises:
      ValueError: naming the first invalid argument, its value and what is allowed.
    """
    observation_shape = check_shape("observation_shape", observation_shape, rank=3)
    for name, value in (("channels", channels), ("downsample", downsample), *arguments.items()):
        validation.check(name, value, kind="argument")
    check_dtype(dtype)
    if projection_size is not None:
        validation.check("projection_size", projection_size, kind="argument")
    return observation_shape, hidden_shape_for(observation_shape, channels, bool(downsample))


def make_stem(in_channels: int, channels: int, *, downsample: bool, dtype, rngs) -> nnx.Dict:
    """The stem of the representation: ``[B, H, W, in_channels] -> [B, h, w, channels]``
    through :func:`apply_stem` (a 3x3 ``conv -> LayerNorm -> ReLU``, or the Atari stem)."""
    kw = dict(dtype=dtype, rngs=rngs)
    if not downsample:
        return nnx.Dict({"conv": ConvNormRelu(in_channels, channels, **kw)})
    # MuZero Appendix F (Atari): a stride-2 conv to half the planes, residual blocks, a stride-2
    # conv, residual blocks, stride-2 average pooling, residual blocks, stride-2 average pooling.
    # The paper has 2, 3 and 3 blocks at these stages; one each is cheaper.
    half = max(channels // 2, 1)
    return nnx.Dict(
        {
            "conv_1": ConvNormRelu(in_channels, half, stride=2, **kw),
            "block_1": ResidualBlock(half, **kw),
            "conv_2": ConvNormRelu(half, channels, stride=2, **kw),
            "block_2": ResidualBlock(channels, **kw),
            "block_3": ResidualBlock(channels, **kw),
        }
    )


def apply_stem(stem: nnx.Dict, x: Array, *, downsample: bool) -> Array:
    """Applies a stem of :func:`make_stem` (built with the same ``downsample``)."""
    if not downsample:
        return stem["conv"](x)
    # The average over the cells inside the image divides by float32 counts: cast back, so that a
    # bfloat16 stem stays bfloat16.
    pool = lambda y: nnx.avg_pool(
        y, (3, 3), strides=(2, 2), padding="SAME", count_include_pad=False
    ).astype(y.dtype)
    x = stem["block_1"](stem["conv_1"](x))
    x = stem["block_2"](stem["conv_2"](x))
    x = stem["block_3"](pool(x))
    return pool(x)


class _ResNetMuZero(EfficientZeroParts, nnx.Module):
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
        projection_size: int | None,
        value_prefix: int | None,
        predict_turn: bool,
        dtype,
        rngs: nnx.Rngs,
    ):
        """``value_prefix``: None, or the LSTM size of a value-prefix network."""
        in_channels, channels = observation_shape[-1], hidden_shape[-1]
        kw = dict(dtype=dtype, rngs=rngs)
        self.stem = make_stem(in_channels, channels, downsample=downsample, **kw)
        self.downsample = downsample
        self.representation = ResidualTower(channels, num_blocks, **kw)

        self.dynamics_conv = conv3x3(channels + num_actions, channels, **kw)
        self.dynamics_norm = plane_norm(channels, **kw)
        self.dynamics = ResidualTower(channels, num_blocks, **kw)

        self.prediction = ResidualTower(channels, prediction_blocks, **kw)
        # Zero-initialised output layers (the heads' "out"): at initialisation every state has value
        # 0, reward 0 and a uniform prior, so the first searches follow visit counts rather than
        # the noise of an untrained network (common MuZero practice, e.g. EfficientZero).
        head = (hidden_shape, head_channels, head_hidden)
        reward_head = ConvHead(*head, reward_bins, **kw)
        self.value_head = ConvHead(*head, value_bins, **kw)
        self.policy_head = ConvHead(*head, num_actions, **kw)
        self.num_actions = num_actions
        self.reward_bins = reward_bins
        self.dtype = dtype
        state_size = math.prod(hidden_shape)
        self.add_efficientzero_parts(
            reward_head=reward_head,
            state_size=state_size,
            features_size=state_size,
            projection_size=projection_size,
            value_prefix=value_prefix,
            reward_bins=reward_bins,
            **kw,
        )
        self.add_turn_head(ConvHead(*head, 1, **kw) if predict_turn else None)

    def _predict(self, hidden: Array, reward_logits: Array) -> ModelOutput:
        x = self.prediction(hidden)
        return ModelOutput(
            value_logits=self.value_head(x),
            reward_logits=reward_logits,
            policy_logits=self.policy_head(x),
        )

    def initial_inference(self, observation: Array) -> tuple[ModelOutput, Any]:
        state = normalize_hidden(
            self.representation(
                apply_stem(self.stem, observation.astype(self.dtype), downsample=self.downsample)
            )
        )
        # The root has no incoming transition: zero reward logits, which the loss does not train.
        reward_logits = jnp.zeros((state.shape[0], self.reward_bins), jnp.float32)
        return self._predict(state, reward_logits), self.hidden_at_root(state)

    def recurrent_inference(self, hidden: Any, action: Array) -> tuple[ModelOutput, Any]:
        state = self.state_of(hidden)
        # MuZero Appendix F: the action enters as planes of the hidden state's spatial size, one per
        # action, all ones for the action taken and all zeros for the others.
        planes = jax.nn.one_hot(action, self.num_actions, dtype=state.dtype)[:, None, None, :]
        planes = jnp.broadcast_to(planes, (*state.shape[:-1], self.num_actions))
        x = self.dynamics_conv(jnp.concatenate([state, planes], axis=-1))
        # A skip connection from the incoming state: the dynamics start close to the identity.
        x = self.dynamics(jax.nn.relu(state + self.dynamics_norm(x)))
        next_state = normalize_hidden(x)
        if self.value_prefix_head is None:
            return self._predict(next_state, self.reward_head(x)), next_state
        features = x.reshape(x.shape[0], -1)
        carry, value_prefix_logits = self.value_prefix_head(hidden[1], features)
        return self._predict(next_state, value_prefix_logits), (next_state, carry)


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
    projection_size: int | None = None,
    value_prefix_horizon: int | None = None,
    lstm_size: int = 64,
    predict_turn: bool = False,
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

    EfficientZero's two parts (Ye et al., 2021) are opt-in, as in
    :func:`~mz_jax.networks.make_mlp_network` (which describes them), and leave the parameters of
    the MuZero modules as they are for the same key. ``projection_size`` P: ``project`` flattens
    the state ``[B, h, w, channels]`` and maps it through
    ``Linear(h * w * channels, P) -> LayerNorm -> ReLU -> Linear(P, P) -> LayerNorm`` (parameters
    ``projection``); ``predict_projection`` is the head of the MLP network (``projection_head``).
    ``value_prefix_horizon`` H: the LSTM cell of the value prefix (``value_prefix_head``, in place
    of ``reward_head``) takes the flattened output of the dynamics tower
    ``[B, h * w * channels]``, which feeds the reward head of a MuZero network.

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
      projection_size: None, or the size P >= 1 of the projections (see above).
      value_prefix_horizon: None, or the horizon H >= 1 of a value-prefix network (see above),
        stored as ``network.value_prefix_horizon``.
      lstm_size: units of the value-prefix LSTM (>= 1); used only with ``value_prefix_horizon``.
      predict_turn: the network gets ``turn_logits(params, hidden) -> [B]`` from a head like the
        value head's on the state, zero-initialised (parameters ``turn_head``): whether the player
        who moved moves again (see :class:`mz_jax.types.MuZeroNetwork`).

    Returns:
      ``(network, params)``: the pure functions and a nested ``dict`` of float32 parameter arrays.
      An action outside ``[0, A)`` is encoded as all-zero planes (no error under jit).

    Raises:
      ValueError: for an invalid argument, naming it, its value and what is allowed.
    """
    network, init = resnet_network(
        observation_shape=observation_shape,
        num_actions=num_actions,
        channels=channels,
        num_blocks=num_blocks,
        downsample=downsample,
        prediction_blocks=prediction_blocks,
        head_channels=head_channels,
        head_hidden=head_hidden,
        value_support_size=value_support_size,
        reward_support_size=reward_support_size,
        dtype=dtype,
        projection_size=projection_size,
        value_prefix_horizon=value_prefix_horizon,
        lstm_size=lstm_size,
        predict_turn=predict_turn,
    )
    return network, init(key)


def resnet_network(
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
    projection_size: int | None = None,
    value_prefix_horizon: int | None = None,
    lstm_size: int = 64,
    predict_turn: bool = False,
) -> tuple[MuZeroNetwork, Callable[[jax.Array | int], Params]]:
    """:func:`make_resnet_network` without a key: ``(network, init)``, with ``init(key) -> params``.

    Nothing is compiled and no parameter is drawn until ``init`` is called (one compiled program);
    the arguments are those of :func:`make_resnet_network` and are checked here.
    """
    observation_shape, hidden_shape = check_resnet_arguments(
        observation_shape=observation_shape,
        num_actions=num_actions,
        channels=channels,
        num_blocks=num_blocks,
        downsample=downsample,
        prediction_blocks=prediction_blocks,
        head_channels=head_channels,
        head_hidden=head_hidden,
        value_support_size=value_support_size,
        reward_support_size=reward_support_size,
        dtype=dtype,
        projection_size=projection_size,
        predict_turn=predict_turn,
    )
    if value_prefix_horizon is not None:
        validation.check("value_prefix_horizon", value_prefix_horizon, kind="argument")
    validation.check("lstm_size", lstm_size, kind="argument")
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
        projection_size=projection_size,
        value_prefix=None if value_prefix_horizon is None else lstm_size,
        predict_turn=predict_turn,
        dtype=dtype,
        rngs=rngs,
    )
    return as_pure_functions(
        build,
        observation_shape=observation_shape,
        hidden_shape=hidden_shape,
        projection_size=projection_size,
        value_prefix_horizon=value_prefix_horizon,
        carry_shape=(lstm_size,),
        turn=predict_turn,
    )
