"""The MLP MuZero network for vector observations (MuZero Appendix F, with dense layers).

Representation, dynamics and prediction are MLPs of :class:`~mz_jax.networks.layers.DenseTorso`
over a latent vector; the action enters the dynamics one-hot. EfficientZero's projection and
value-prefix head are opt-in, and so is a 3x3 convolution on image observations before the
representation (the MinAtar paper's DQN network).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from mz_jax.core import validation
from mz_jax.networks.layers import (
    ZEROS,
    DenseTorso,
    EfficientZeroParts,
    normalize_hidden,
)
from mz_jax.networks.pure import Params, as_pure_functions, check_dtype, check_shape
from mz_jax.types import Array, ModelOutput, MuZeroNetwork


class _MlpMuZero(EfficientZeroParts, nnx.Module):
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
        projection_size: int | None,
        value_prefix: int | None,
        observation_layer_norm: bool,
        predict_turn: bool,
        conv: tuple[int, int] | None,
        observation_scale: tuple[float, ...] | None,
        dtype,
        rngs: nnx.Rngs,
        action_bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
    ):
        """``value_prefix``: None, or the LSTM size of a value-prefix network. ``conv``: None, or
        ``(in_channels, out_channels)`` of the convolution before the representation MLP, whose
        ``observation_size`` is then the convolution's flattened output. ``observation_scale``:
        None, or the factors of the flattened observation (a constant, not a parameter).
        ``action_bounds``: None for A discrete actions, or the Box ``(low, high)`` of a continuous
        action of ``num_actions`` = D dimensions: the dynamics takes it scaled to [0, 1] and the
        policy head predicts a squashed Gaussian's mean and log standard deviation, ``[B, 2D]``."""
        last = hidden_sizes[-1]
        dense = lambda n_in, n_out, **kw: nnx.Linear(n_in, n_out, dtype=dtype, rngs=rngs, **kw)
        # Drawn before every other module only when it exists: without it, the parameters are
        # those of the network before the option.
        self.conv = (
            None
            if conv is None
            else nnx.Conv(*conv, (3, 3), padding="SAME", dtype=dtype, rngs=rngs)
        )
        self.representation = DenseTorso(
            observation_size,
            hidden_sizes,
            dtype=dtype,
            rngs=rngs,
            first_norm=observation_layer_norm,
        )
        self.representation_out = dense(last, latent_size)
        self.dynamics = DenseTorso(latent_size + num_actions, hidden_sizes, dtype=dtype, rngs=rngs)
        policy_size = num_actions if action_bounds is None else 2 * num_actions
        self.dynamics_out = dense(last, latent_size)
        self.prediction = DenseTorso(latent_size, hidden_sizes, dtype=dtype, rngs=rngs)
        # Zero-initialised output layers: at initialisation every state has value 0, reward 0 and a
        # uniform prior, so the first searches follow visit counts rather than the noise of an
        # untrained network (common MuZero practice, e.g. EfficientZero).
        reward_head = dense(last, reward_bins, kernel_init=ZEROS)
        self.value_head = dense(last, value_bins, kernel_init=ZEROS)
        self.policy_head = dense(last, policy_size, kernel_init=ZEROS)
        self.num_actions = num_actions
        self.action_bounds = action_bounds
        self.reward_bins = reward_bins
        self.observation_scale = observation_scale
        self.dtype = dtype
        self.add_efficientzero_parts(
            reward_head=reward_head,
            state_size=latent_size,
            features_size=last,
            projection_size=projection_size,
            value_prefix=value_prefix,
            reward_bins=reward_bins,
            dtype=dtype,
            rngs=rngs,
        )
        turn_head = None
        if predict_turn:
            width = hidden_sizes[0]
            turn_head = nnx.Sequential(
                DenseTorso(latent_size, (width,), dtype=dtype, rngs=rngs),
                dense(width, 1, kernel_init=ZEROS),
            )
        self.add_turn_head(turn_head)

    def _predict(self, hidden: Array, reward_logits: Array) -> ModelOutput:
        x = self.prediction(hidden)
        return ModelOutput(
            value_logits=self.value_head(x).astype(jnp.float32),
            reward_logits=reward_logits,
            policy_logits=self.policy_head(x).astype(jnp.float32),
        )

    def initial_inference(self, observation: Array) -> tuple[ModelOutput, Any]:
        x = observation.astype(self.dtype)
        if self.observation_scale is not None:
            scale = jnp.asarray(self.observation_scale, self.dtype)
            x = x * scale.reshape(x.shape[1:])
        if self.conv is not None:
            x = jax.nn.relu(self.conv(x))
        x = x.reshape(x.shape[0], -1)
        state = normalize_hidden(self.representation_out(self.representation(x)))
        # The root has no incoming transition: zero reward logits, which the loss does not train.
        reward_logits = jnp.zeros((state.shape[0], self.reward_bins), jnp.float32)
        return self._predict(state, reward_logits), self.hidden_at_root(state)

    def recurrent_inference(self, hidden: Any, action: Array) -> tuple[ModelOutput, Any]:
        state = self.state_of(hidden)
        if self.action_bounds is None:
            encoded = jax.nn.one_hot(action, self.num_actions, dtype=state.dtype)
        else:  # the Box scaled to [0, 1], the range of the hidden state and of a one-hot action
            low, high = (jnp.asarray(bound, jnp.float32) for bound in self.action_bounds)
            encoded = jnp.clip((action - low) / (high - low), 0.0, 1.0).astype(state.dtype)
        x = self.dynamics(jnp.concatenate([state, encoded], axis=-1))
        next_state = normalize_hidden(self.dynamics_out(x))
        if self.value_prefix_head is None:
            reward_logits = self.reward_head(x).astype(jnp.float32)
            return self._predict(next_state, reward_logits), next_state
        carry, value_prefix_logits = self.value_prefix_head(hidden[1], x)
        return self._predict(next_state, value_prefix_logits), (next_state, carry)


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
    projection_size: int | None = None,
    value_prefix_horizon: int | None = None,
    lstm_size: int = 64,
    observation_layer_norm: bool = True,
    predict_turn: bool = False,
    conv_channels: int | None = None,
    observation_scale: Sequence[float] | None = None,
    action_bounds: tuple[Sequence[float], Sequence[float]] | None = None,
) -> tuple[MuZeroNetwork, Params]:
    """A MuZero network of MLPs for vector observations (MuZero Appendix F, with dense layers).

    * representation: ``observation[B, *observation_shape]``, flattened,
      ``-> hidden[B, latent_size]`` (with ``conv_channels``, an image ``[B, H, W, C]`` passes
      through a convolution first);
    * dynamics: ``concat(hidden, one_hot(action))[B, latent_size + A] ->`` the next hidden state and
      ``reward_logits[B, 2 * reward_support_size + 1]``, both from one shared MLP;
    * prediction: ``hidden -> value_logits[B, 2 * value_support_size + 1], policy_logits[B, A]``.

    Every MLP is ``Linear -> LayerNorm -> ReLU`` per entry of ``hidden_sizes`` (the
    representation's first layer without its LayerNorm if ``observation_layer_norm`` is False).
    Hidden states are
    min-max scaled to ``[0, 1]`` per example (Appendix G), the range of the one-hot action input.
    The reward, value and policy output layers start at zero. The root's ``reward_logits`` (from
    ``initial_inference``) are zeros.

    Two opt-in parts of EfficientZero (Ye et al., 2021); without them the network and its
    parameters are those of MuZero, and with them the parameters of the MuZero modules are the
    same for the same key (the new modules draw their numbers last):

    * ``projection_size`` P (§4.1): the network gets ``project(params, hidden) -> [B, P]``,
      ``Linear(latent, P) -> LayerNorm -> ReLU -> Linear(P, P) -> LayerNorm`` (parameters
      ``projection``), and ``predict_projection(params, projection[B, P]) -> [B, P]``,
      ``Linear(P, max(P // 2, 1)) -> LayerNorm -> ReLU -> Linear(P)`` (``projection_head``).
    * ``value_prefix_horizon`` H (§4.2): a value-prefix network. Its hidden state is a pair
      ``(state[B, latent_size], (c, h))``, ``c`` and ``h`` each ``[B, lstm_size]`` float32, zeros
      from ``initial_inference``. In ``recurrent_inference`` an LSTM cell takes the dynamics MLP's
      output and the carry ``(c, h)``; ``reward_logits`` are ``Linear(ReLU(LayerNorm(h')))``
      (starting at zero), the value prefix: the rewards summed since the carry was last zeroed
      (parameters ``value_prefix_head``; there is no ``reward_head``). The network never zeroes
      the carry: the caller does, every H steps (see :class:`mz_jax.types.MuZeroNetwork`).

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
      projection_size: None, or the size P >= 1 of the projections (see above).
      value_prefix_horizon: None, or the horizon H >= 1 of a value-prefix network (see above),
        stored as ``network.value_prefix_horizon``.
      lstm_size: units of the value-prefix LSTM (>= 1); used only with ``value_prefix_horizon``.
      observation_layer_norm: False leaves out the LayerNorm after the representation's first
        layer, which rescales each observation's features to one size (a state's magnitude, such
        as CartPole's angle, then reaches the network only through that layer's biases).
      predict_turn: the network gets ``turn_logits(params, hidden) -> [B]``, whether the player
        who moved moves again, for two-player games where turns do not alternate (see
        :class:`mz_jax.types.MuZeroNetwork`): ``Linear -> LayerNorm -> ReLU`` of
        ``hidden_sizes[0]`` units on the state, then a zero-initialised ``Linear`` to one logit
        (parameters ``turn_head``; at 0 the search alternates).
      conv_channels: None, or for image observations ``[H, W, C]``: the representation first
        applies a 3x3 convolution with this many channels (stride 1, "SAME" padding, with bias;
        parameters ``conv``) and a ReLU, and flattens its ``[H, W, conv_channels]`` output, as the
        network of the MinAtar paper's DQN (Young & Tian, 2019: 16 channels, then one dense layer).
        Its features are the same at every position of the frame, where a dense layer on the raw
        frame must learn each position's pattern apart. Dynamics and prediction are unchanged.
      observation_scale: None, or ``prod(observation_shape)`` numbers > 0, one per feature of the
        flattened observation: the representation multiplies the observation by them before
        anything else (a constant of the network, not a parameter). Features of very different
        sizes then move the first layer's output by similar amounts, where Adam's steps are about
        the same size for every weight (CartPole: the pole's angle is a few hundredths, the cart's
        position up to 2.4).
      action_bounds: None for A discrete actions; for a continuous action, the Box ``(low,
        high)``, each ``num_actions`` = D finite numbers with ``low < high``. The dynamics then
        takes ``action[B, D]`` float, scaled to ``(action - low) / (high - low)`` and clipped to
        [0, 1], in place of the one-hot action, and ``policy_logits[B, 2D]`` are the mean and
        log standard deviation of a Gaussian squashed into the Box
        (:func:`mz_jax.mcts.sampled.squashed_gaussian`; Sampled MuZero, Hubert et al., 2021),
        both starting at 0.
    Returns:
      ``(network, params)``: the pure functions and a nested ``dict`` of float32 parameter arrays.
      An action outside ``[0, A)`` is encoded as an all-zero one-hot vector (no error under jit).

    Raises:
      ValueError: for an invalid argument, naming it, its value and what is allowed.
    """
    network, init = mlp_network(
        observation_shape=observation_shape,
        num_actions=num_actions,
        hidden_sizes=hidden_sizes,
        latent_size=latent_size,
        value_support_size=value_support_size,
        reward_support_size=reward_support_size,
        dtype=dtype,
        projection_size=projection_size,
        value_prefix_horizon=value_prefix_horizon,
        lstm_size=lstm_size,
        observation_layer_norm=observation_layer_norm,
        predict_turn=predict_turn,
        conv_channels=conv_channels,
        observation_scale=observation_scale,
        action_bounds=action_bounds,
    )
    return network, init(key)


def mlp_network(
    *,
    observation_shape: Sequence[int],
    num_actions: int,
    hidden_sizes: Sequence[int] = (64, 64),
    latent_size: int = 64,
    value_support_size: int = 10,
    reward_support_size: int = 10,
    dtype: Any = jnp.float32,
    projection_size: int | None = None,
    value_prefix_horizon: int | None = None,
    lstm_size: int = 64,
    observation_layer_norm: bool = True,
    predict_turn: bool = False,
    conv_channels: int | None = None,
    observation_scale: Sequence[float] | None = None,
    action_bounds: tuple[Sequence[float], Sequence[float]] | None = None,
) -> tuple[MuZeroNetwork, Callable[[jax.Array | int], Params]]:
    """:func:`make_mlp_network` without a key: ``(network, init)``, with ``init(key) -> params``.

    Nothing is compiled and no parameter is drawn until ``init`` is called (one compiled program);
    the arguments are those of :func:`make_mlp_network` and are checked here.
    """
    observation_shape = check_shape("observation_shape", observation_shape)
    validation.check("num_actions", num_actions, kind="argument")
    # Any sequence of widths is taken (a list from a config file, a numpy array); a value that is
    # no sequence at all fails the rule below.
    with contextlib.suppress(TypeError):
        hidden_sizes = tuple(hidden_sizes)
    validation.check("hidden_sizes", hidden_sizes, kind="argument")
    validation.check("latent_size", latent_size, kind="argument")
    validation.check("value_support_size", value_support_size, kind="argument")
    validation.check("reward_support_size", reward_support_size, kind="argument")
    check_dtype(dtype)
    if projection_size is not None:
        validation.check("projection_size", projection_size, kind="argument")
    if value_prefix_horizon is not None:
        validation.check("value_prefix_horizon", value_prefix_horizon, kind="argument")
    validation.check("lstm_size", lstm_size, kind="argument")
    validation.check("observation_layer_norm", observation_layer_norm, kind="argument")
    validation.check("predict_turn", predict_turn, kind="argument")
    conv, observation_size = None, math.prod(observation_shape)
    if conv_channels is not None:
        validation.check("conv_channels", conv_channels, kind="argument")
        if len(observation_shape) != 3:
            validation.fail(
                "conv_channels",
                conv_channels,
                f"None for observation_shape {observation_shape}: the convolution needs image "
                "observations [H, W, C]",
                kind="argument",
            )
        height, width, channels = observation_shape
        conv, observation_size = (channels, conv_channels), height * width * conv_channels
    if observation_scale is not None:
        # Any sequence of numbers is taken (a list from a config file, a numpy array).
        with contextlib.suppress(TypeError):
            observation_scale = tuple(observation_scale)
        validation.check("observation_scale", observation_scale, kind="argument")
        observation_scale = tuple(float(x) for x in observation_scale)
        features = math.prod(observation_shape)
        if len(observation_scale) != features:
            validation.fail(
                "observation_scale",
                observation_scale,
                f"None or {features} numbers > 0, one per feature of an observation of shape "
                f"{observation_shape}; got {len(observation_scale)}",
                kind="argument",
            )
    if action_bounds is not None:
        action_bounds = _checked_action_bounds(action_bounds, num_actions)
    value_prefix = None if value_prefix_horizon is None else lstm_size
    build = lambda rngs: _MlpMuZero(
        observation_size=observation_size,
        num_actions=num_actions,
        hidden_sizes=hidden_sizes,
        latent_size=latent_size,
        value_bins=2 * value_support_size + 1,
        reward_bins=2 * reward_support_size + 1,
        projection_size=projection_size,
        value_prefix=value_prefix,
        observation_layer_norm=observation_layer_norm,
        predict_turn=predict_turn,
        conv=conv,
        observation_scale=observation_scale,
        dtype=dtype,
        rngs=rngs,
        action_bounds=action_bounds,
    )
    return as_pure_functions(
        build,
        observation_shape=observation_shape,
        hidden_shape=(latent_size,),
        projection_size=projection_size,
        value_prefix_horizon=value_prefix_horizon,
        carry_shape=(lstm_size,),
        turn=predict_turn,
        action_size=None if action_bounds is None else num_actions,
    )


def _checked_action_bounds(
    action_bounds: Any, num_actions: int
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(low, high)`` as tuples of ``num_actions`` floats, or a one-line ``ValueError`` naming
    ``action_bounds``: two sequences of D = ``num_actions`` finite numbers with ``low < high``."""
    allowed = (
        f"None or (low, high), each {num_actions} finite numbers (num_actions) with low < high "
        "(a Box with infinite bounds cannot be squashed into)"
    )
    try:
        low, high = (tuple(float(x) for x in bound) for bound in action_bounds)
    except (TypeError, ValueError):
        validation.fail("action_bounds", action_bounds, allowed, kind="argument")
    finite = all(math.isfinite(x) for x in low + high)
    if len(low) != num_actions or len(high) != num_actions or not finite:
        validation.fail("action_bounds", action_bounds, allowed, kind="argument")
    if not all(lo < hi for lo, hi in zip(low, high, strict=True)):
        validation.fail("action_bounds", action_bounds, allowed, kind="argument")
    return low, high
