"""The residual Stochastic MuZero network for image observations (Antonoglou et al., 2022).

Six functions over hidden planes ``[B, h, w, channels]`` (NHWC), each built from the blocks of
:mod:`mz_jax.networks.resnet` (MuZero Appendix F):

* representation ``h``: the ResNet's stem and a residual tower ``observation -> state``;
* prediction ``f``: residual blocks, then ``state -> value_logits, policy_logits``;
* afterstate dynamics ``φ``: ``concat(state, action planes)``, a 3x3 conv with a skip connection
  from the state and a residual tower ``-> afterstate``;
* afterstate prediction ``ψ``: residual blocks, then
  ``afterstate -> Q value_logits, chance_logits [B, C]``;
* chance dynamics ``g``: ``concat(afterstate, code planes)``, a 3x3 conv with a skip connection from
  the afterstate and a residual tower ``-> next state, reward_logits``;
* encoder ``e``: a stem like the representation's on ``concat(observation, next_observation)``
  (along the channels), flattened, and a dense layer ``-> code logits [B, C]``.

States and afterstates are min-max scaled to ``[0, 1]`` per example over all of ``h, w, channels``
(MuZero Appendix G), the range of the action and code planes. The value, Q, reward, policy and σ
heads end in output layers that start at zero (value 0, uniform prior and σ); the encoder's does
not, so that different transitions get different codes from the start. The functions are those of
:class:`mz_jax.types.StochasticMuZeroNetwork`; parameters are a nested ``dict``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from mz_jax.networks.chance import as_stochastic_functions
from mz_jax.networks.layers import (
    ConvHead,
    EfficientZeroParts,
    ResidualTower,
    conv3x3,
    normalize_hidden,
    plane_norm,
)
from mz_jax.networks.pure import Params
from mz_jax.networks.resnet import apply_stem, check_resnet_arguments, make_stem
from mz_jax.types import AfterstateOutput, Array, ModelOutput, StochasticMuZeroNetwork


class _PlaneDynamics(nnx.Module):
    """``(x[B, h, w, C], planes[B, h, w, n]) -> tower(relu(x + norm(conv(concat(x, planes)))))``:
    the ResNet's dynamics, with a skip connection from ``x`` (they start close to the identity)."""

    def __init__(self, channels: int, num_planes: int, num_blocks: int, *, dtype, rngs):
        self.conv = conv3x3(channels + num_planes, channels, dtype=dtype, rngs=rngs)
        self.norm = plane_norm(channels, dtype=dtype, rngs=rngs)
        self.tower = ResidualTower(channels, num_blocks, dtype=dtype, rngs=rngs)

    def __call__(self, x: Array, planes: Array) -> Array:
        # One plane per input (action or outcome), broadcast to the hidden state's spatial size.
        planes = jnp.broadcast_to(planes[:, None, None, :], (*x.shape[:-1], planes.shape[-1]))
        y = self.conv(jnp.concatenate([x, planes.astype(x.dtype)], axis=-1))
        return self.tower(jax.nn.relu(x + self.norm(y)))


class _ResNetStochasticMuZero(EfficientZeroParts, nnx.Module):
    def __init__(
        self,
        *,
        observation_shape: tuple[int, int, int],
        hidden_shape: tuple[int, int, int],
        num_actions: int,
        num_chance_outcomes: int,
        num_blocks: int,
        downsample: bool,
        prediction_blocks: int,
        head_channels: int,
        head_hidden: int,
        value_bins: int,
        reward_bins: int,
        predict_turn: bool,
        projection_size: int | None,
        dtype,
        rngs: nnx.Rngs,
    ):
        in_channels, channels = observation_shape[-1], hidden_shape[-1]
        kw = dict(dtype=dtype, rngs=rngs)
        head = lambda out: ConvHead(hidden_shape, head_channels, head_hidden, out, **kw)
        self.stem = make_stem(in_channels, channels, downsample=downsample, **kw)
        self.representation = ResidualTower(channels, num_blocks, **kw)
        self.prediction = ResidualTower(channels, prediction_blocks, **kw)
        self.value_head = head(value_bins)
        self.policy_head = head(num_actions)
        self.afterstate_dynamics = _PlaneDynamics(channels, num_actions, num_blocks, **kw)
        self.afterstate_prediction = ResidualTower(channels, prediction_blocks, **kw)
        self.q_head = head(value_bins)
        self.chance_head = head(num_chance_outcomes)
        self.chance_dynamics = _PlaneDynamics(channels, num_chance_outcomes, num_blocks, **kw)
        reward_head = head(reward_bins)
        self.encoder = make_stem(2 * in_channels, channels, downsample=downsample, **kw)
        self.encoder_out = nnx.Linear(math.prod(hidden_shape), num_chance_outcomes, **kw)
        state_size = math.prod(hidden_shape)
        self.add_efficientzero_parts(
            reward_head=reward_head,
            state_size=state_size,
            features_size=state_size,
            projection_size=projection_size,
            value_prefix=None,
            reward_bins=reward_bins,
            **kw,
        )
        self.add_turn_head(head(1) if predict_turn else None)
        self.downsample = downsample
        self.num_actions = num_actions
        self.reward_bins = reward_bins
        self.dtype = dtype

    def _predict(self, state: Array, reward_logits: Array) -> ModelOutput:
        x = self.prediction(state)
        return ModelOutput(self.value_head(x), reward_logits, self.policy_head(x))

    def initial_inference(self, observation: Array) -> tuple[ModelOutput, Array]:
        x = apply_stem(self.stem, observation.astype(self.dtype), downsample=self.downsample)
        state = normalize_hidden(self.representation(x))
        # The root has no incoming transition: zero reward logits, which the loss does not train.
        reward_logits = jnp.zeros((state.shape[0], self.reward_bins), jnp.float32)
        return self._predict(state, reward_logits), state

    def afterstate_inference(self, state: Array, action: Array) -> tuple[AfterstateOutput, Array]:
        action_one_hot = jax.nn.one_hot(action, self.num_actions, dtype=state.dtype)
        afterstate = normalize_hidden(self.afterstate_dynamics(state, action_one_hot))
        y = self.afterstate_prediction(afterstate)
        return AfterstateOutput(self.q_head(y), self.chance_head(y)), afterstate

    def recurrent_inference(self, afterstate: Array, code: Array) -> tuple[ModelOutput, Array]:
        x = self.chance_dynamics(afterstate, code)
        state = normalize_hidden(x)
        return self._predict(state, self.reward_head(x)), state

    def encode_chance(self, observation: Array, next_observation: Array) -> Array:
        x = jnp.concatenate([observation, next_observation], axis=-1).astype(self.dtype)
        x = apply_stem(self.encoder, x, downsample=self.downsample)
        return self.encoder_out(x.reshape(x.shape[0], -1)).astype(jnp.float32)


def stochastic_resnet_network(
    *,
    observation_shape: Sequence[int],
    num_actions: int,
    num_chance_outcomes: int,
    channels: int = 32,
    num_blocks: int = 2,
    downsample: bool = False,
    prediction_blocks: int = 1,
    head_channels: int = 4,
    head_hidden: int = 32,
    value_support_size: int = 10,
    reward_support_size: int = 10,
    dtype: Any = jnp.float32,
    predict_turn: bool = False,
    projection_size: int | None = None,
) -> tuple[StochasticMuZeroNetwork, Callable[[jax.Array | int], Params]]:
    """A Stochastic MuZero network of residual towers (see the module docstring): ``(network, init)``.

    ``init(key) -> params`` draws every parameter in one compiled program. The arguments are those
    of :func:`mz_jax.networks.resnet_network` and ``num_chance_outcomes`` C >= 1, the size of the
    codebook; there is no value prefix. With observations ``(H, W, C_obs)``, states and afterstates
    are ``[B, h, w, channels]`` with ``h, w = H, W``, or ``ceil(H / 16), ceil(W / 16)`` with
    ``downsample`` (the Atari stem). The functions, in the ResNet's terms:

    * ``φ`` and ``g`` are the ResNet's dynamics, with the action's one-hot (A planes) or the code
      (C planes) as planes of the state's spatial size, each followed by ``num_blocks`` residual
      blocks; ``g``'s reward head reads its tower's output, as the ResNet's reward head does;
    * ``f`` and ``ψ`` each have ``prediction_blocks`` residual blocks and two heads like the
      ResNet's value head (value and policy; Q and σ);
    * ``e`` is a stem like the representation's (``downsample`` included) on the two observations
      stacked along the channels ``[B, H, W, 2 C_obs]``, flattened to ``[B, h * w * channels]``,
      and ``Linear(h * w * channels, C)`` (parameters ``encoder`` and ``encoder_out``).

    ``predict_turn`` adds ``turn_logits(params, state) -> [B]`` (backgammon-like games, where the
    chance event decides who moves next) from a zero-initialised head like the value head's on the
    state (``turn_head``). ``projection_size`` P adds EfficientZero's projection network and head on
    the flattened states, as :func:`mz_jax.networks.resnet_network` does (``projection``,
    ``projection_head``), for the consistency loss, which gives the chance code something to carry:
    the next state must match the observation that followed.

    ``dtype`` is the computation dtype (e.g. ``jnp.bfloat16``): parameters and logits stay
    float32; states and afterstates have this dtype. An action outside ``[0, A)`` is encoded as
    all-zero planes (no error under jit).

    Raises:
      ValueError: for an invalid argument, naming it, its value and what is allowed.
    """
    observation_shape, hidden_shape = check_resnet_arguments(
        observation_shape=observation_shape,
        num_actions=num_actions,
        num_chance_outcomes=num_chance_outcomes,
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

    build = lambda rngs: _ResNetStochasticMuZero(
        observation_shape=observation_shape,
        hidden_shape=hidden_shape,
        num_actions=num_actions,
        num_chance_outcomes=num_chance_outcomes,
        num_blocks=num_blocks,
        downsample=bool(downsample),
        prediction_blocks=prediction_blocks,
        head_channels=head_channels,
        head_hidden=head_hidden,
        value_bins=2 * value_support_size + 1,
        reward_bins=2 * reward_support_size + 1,
        predict_turn=predict_turn,
        projection_size=projection_size,
        dtype=dtype,
        rngs=rngs,
    )
    return as_stochastic_functions(
        build,
        observation_shape=observation_shape,
        state_shape=hidden_shape,
        num_chance_outcomes=num_chance_outcomes,
        predict_turn=predict_turn,
        projection_size=projection_size,
    )


__all__ = ["stochastic_resnet_network"]
