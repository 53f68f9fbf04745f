"""The MLP Stochastic MuZero network for vector observations (Antonoglou et al., 2022).

Six functions over a latent vector ``[B, latent_size]``, each an MLP of
:class:`~mz_jax.networks.layers.DenseTorso` as in :mod:`mz_jax.networks.mlp`:

* representation ``h``: the flattened observation ``-> state``;
* prediction ``f``: ``state -> value_logits, policy_logits``;
* afterstate dynamics ``φ``: ``concat(state, one_hot(action)) -> afterstate``;
* afterstate prediction ``ψ``: ``afterstate -> Q value_logits, chance_logits [B, C]``;
* chance dynamics ``g``: ``concat(afterstate, code[B, C]) -> next state, reward_logits``;
* encoder ``e``: ``concat(observation, next_observation) -> code logits [B, C]``.

States and afterstates are min-max scaled to ``[0, 1]`` per example (MuZero Appendix G). The value,
Q, reward, policy and σ output layers start at zero (value 0, uniform prior and σ); the encoder's
does not, so that different transitions get different codes from the start. The functions are
those of :class:`mz_jax.types.StochasticMuZeroNetwork`; parameters are a nested ``dict``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from mz_jax.core import validation
from mz_jax.networks.layers import ZEROS, DenseTorso, ProjectionMlp, normalize_hidden
from mz_jax.networks.pure import Params, check_array_shape, check_key, check_shape
from mz_jax.types import AfterstateOutput, Array, ModelOutput, StochasticMuZeroNetwork


class _MlpStochasticMuZero(nnx.Module):
    def __init__(
        self,
        *,
        observation_size: int,
        num_actions: int,
        num_chance_outcomes: int,
        hidden_sizes: Sequence[int],
        latent_size: int,
        value_bins: int,
        reward_bins: int,
        observation_layer_norm: bool,
        predict_turn: bool,
        projection_size: int | None,
        rngs: nnx.Rngs,
    ):
        last = hidden_sizes[-1]
        dense = lambda n_in, n_out, **kw: nnx.Linear(n_in, n_out, rngs=rngs, **kw)
        torso = lambda n_in, **kw: DenseTorso(
            n_in, hidden_sizes, dtype=jnp.float32, rngs=rngs, **kw
        )
        self.representation = torso(observation_size, first_norm=observation_layer_norm)
        self.representation_out = dense(last, latent_size)
        self.prediction = torso(latent_size)
        self.value_head = dense(last, value_bins, kernel_init=ZEROS)
        self.policy_head = dense(last, num_actions, kernel_init=ZEROS)
        self.afterstate_dynamics = torso(latent_size + num_actions)
        self.afterstate_out = dense(last, latent_size)
        self.afterstate_prediction = torso(latent_size)
        self.q_head = dense(last, value_bins, kernel_init=ZEROS)
        self.chance_head = dense(last, num_chance_outcomes, kernel_init=ZEROS)
        self.chance_dynamics = torso(latent_size + num_chance_outcomes)
        self.chance_out = dense(last, latent_size)
        self.reward_head = dense(last, reward_bins, kernel_init=ZEROS)
        self.encoder = torso(2 * observation_size, first_norm=observation_layer_norm)
        self.encoder_out = dense(last, num_chance_outcomes)
        self.turn_head = (
            nnx.Sequential(torso(latent_size), dense(last, 1, kernel_init=ZEROS))
            if predict_turn
            else None
        )
        p, kw = projection_size, dict(dtype=jnp.float32, rngs=rngs)
        self.projection = (
            None if p is None else ProjectionMlp(latent_size, p, p, out_norm=True, **kw)
        )
        self.projection_head = (
            None if p is None else ProjectionMlp(p, max(p // 2, 1), p, out_norm=False, **kw)
        )
        self.num_actions = num_actions
        self.reward_bins = reward_bins

    def _predict(self, state: Array, reward_logits: Array) -> ModelOutput:
        x = self.prediction(state)
        return ModelOutput(self.value_head(x), reward_logits, self.policy_head(x))

    def initial_inference(self, observation: Array) -> tuple[ModelOutput, Array]:
        x = observation.reshape(observation.shape[0], -1).astype(jnp.float32)
        state = normalize_hidden(self.representation_out(self.representation(x)))
        # The root has no incoming transition: zero reward logits, which the loss does not train.
        return self._predict(state, jnp.zeros((state.shape[0], self.reward_bins))), state

    def afterstate_inference(self, state: Array, action: Array) -> tuple[AfterstateOutput, Array]:
        action_one_hot = jax.nn.one_hot(action, self.num_actions, dtype=state.dtype)
        x = self.afterstate_dynamics(jnp.concatenate([state, action_one_hot], axis=-1))
        afterstate = normalize_hidden(self.afterstate_out(x))
        y = self.afterstate_prediction(afterstate)
        return AfterstateOutput(self.q_head(y), self.chance_head(y)), afterstate

    def recurrent_inference(self, afterstate: Array, code: Array) -> tuple[ModelOutput, Array]:
        x = self.chance_dynamics(jnp.concatenate([afterstate, code.astype(afterstate.dtype)], -1))
        state = normalize_hidden(self.chance_out(x))
        return self._predict(state, self.reward_head(x)), state

    def project(self, state: Array) -> Array:
        return self.projection(state)

    def predict_projection(self, projection: Array) -> Array:
        return self.projection_head(projection)

    def turn_logits(self, state: Array) -> Array:
        return self.turn_head(state)[:, 0]

    def encode_chance(self, observation: Array, next_observation: Array) -> Array:
        flat = lambda o: o.reshape(o.shape[0], -1).astype(jnp.float32)
        x = jnp.concatenate([flat(observation), flat(next_observation)], axis=-1)
        return self.encoder_out(self.encoder(x))


def stochastic_mlp_network(
    *,
    observation_shape: Sequence[int],
    num_actions: int,
    num_chance_outcomes: int,
    hidden_sizes: Sequence[int] = (64, 64),
    latent_size: int = 64,
    value_support_size: int = 10,
    reward_support_size: int = 10,
    observation_layer_norm: bool = True,
    predict_turn: bool = False,
    projection_size: int | None = None,
) -> tuple[StochasticMuZeroNetwork, Callable[[jax.Array | int], Params]]:
    """A Stochastic MuZero network of MLPs (see the module docstring): ``(network, init)``.

    ``init(key) -> params`` draws every parameter in one compiled program. The arguments are those
    of :func:`mz_jax.networks.mlp_network` (float32 only; ``predict_turn`` for backgammon-like games,
    where the chance event decides who moves next) and ``num_chance_outcomes`` C >= 1, the size of
    the codebook; ``projection_size`` P adds EfficientZero's projection network and head on the
    states (as :func:`mz_jax.networks.mlp_network` does), for the consistency loss, which gives the
    chance code something to carry: the next state must match the observation that followed.

    Raises:
      ValueError: for an invalid argument, naming it, its value and what is allowed.
    """
    observation_shape = check_shape("observation_shape", observation_shape)
    validation.check("num_actions", num_actions, kind="argument")
    validation.check("num_chance_outcomes", num_chance_outcomes, kind="argument")
    with contextlib.suppress(TypeError):
        hidden_sizes = tuple(hidden_sizes)
    for name, value in (
        ("hidden_sizes", hidden_sizes),
        ("latent_size", latent_size),
        ("value_support_size", value_support_size),
        ("reward_support_size", reward_support_size),
        ("observation_layer_norm", observation_layer_norm),
        ("predict_turn", predict_turn),
    ):
        validation.check(name, value, kind="argument")
    if projection_size is not None:
        validation.check("projection_size", projection_size, kind="argument")

    build = lambda rngs: _MlpStochasticMuZero(
        observation_size=math.prod(observation_shape),
        num_actions=num_actions,
        num_chance_outcomes=num_chance_outcomes,
        hidden_sizes=hidden_sizes,
        latent_size=latent_size,
        value_bins=2 * value_support_size + 1,
        reward_bins=2 * reward_support_size + 1,
        observation_layer_norm=observation_layer_norm,
        predict_turn=predict_turn,
        projection_size=projection_size,
        rngs=rngs,
    )
    return as_stochastic_functions(
        build,
        observation_shape=observation_shape,
        state_shape=(latent_size,),
        num_chance_outcomes=num_chance_outcomes,
        predict_turn=predict_turn,
        projection_size=projection_size,
    )


def as_stochastic_functions(
    build: Callable[[nnx.Rngs], nnx.Module],
    *,
    observation_shape: tuple[int, ...],
    state_shape: tuple[int, ...],
    num_chance_outcomes: int,
    predict_turn: bool,
    projection_size: int | None,
) -> tuple[StochasticMuZeroNetwork, Callable[[jax.Array | int], Params]]:
    """The pure functions of the Stochastic MuZero module ``build(rngs)`` and ``init(key)``.

    As :func:`mz_jax.networks.pure.as_pure_functions` does for MuZero: ``build`` makes a module
    holding ``nnx.Param`` state only, with ``initial_inference(observation)``,
    ``afterstate_inference(state, action)``, ``recurrent_inference(afterstate, code)`` and
    ``encode_chance(observation, next_observation)`` (and ``turn_logits(state)`` with
    ``predict_turn``, ``project(state)`` and ``predict_projection(projection)`` with
    ``projection_size``). The inputs' shapes are checked at trace time: observations against
    ``observation_shape``, states and afterstates against ``state_shape``, codes against
    ``(num_chance_outcomes,)``, and the batch sizes of the pairs against each other.
    """
    abstract = nnx.eval_shape(lambda: build(nnx.Rngs(jax.random.key(0))))
    graphdef, _ = nnx.split(abstract, nnx.Param)
    model = lambda params: nnx.merge(graphdef, params)

    @jax.jit
    def draw(key: jax.Array) -> Params:
        return nnx.to_pure_dict(nnx.split(build(nnx.Rngs(key)), nnx.Param)[1])

    def check_batch(name: str, x: Array, batch: int) -> None:
        if x.shape[:1] != (batch,):
            raise ValueError(f"{name} must have the batch size {batch}; got shape {list(x.shape)}")

    def initial_inference(params: Params, observation: Array) -> tuple[ModelOutput, Array]:
        check_array_shape("observation", observation, observation_shape)
        return model(params).initial_inference(observation)

    def afterstate_inference(params: Params, state: Array, action: Array):
        check_array_shape("state", state, state_shape)
        if not jnp.issubdtype(action.dtype, jnp.integer):
            raise ValueError(f"action must be an integer array [B]; got {action.dtype}")
        check_batch("action", action, state.shape[0])
        return model(params).afterstate_inference(state, action)

    def recurrent_inference(params: Params, afterstate: Array, code: Array):
        check_array_shape("afterstate", afterstate, state_shape)
        check_array_shape("code", code, (num_chance_outcomes,))
        check_batch("code", code, afterstate.shape[0])
        return model(params).recurrent_inference(afterstate, code)

    def encode_chance(params: Params, observation: Array, next_observation: Array) -> Array:
        check_array_shape("observation", observation, observation_shape)
        check_array_shape("next_observation", next_observation, observation_shape)
        check_batch("next_observation", next_observation, observation.shape[0])
        return model(params).encode_chance(observation, next_observation)

    def turn_logits(params: Params, state: Array) -> Array:
        check_array_shape("state", state, state_shape)
        return model(params).turn_logits(state)

    def project(params: Params, state: Array) -> Array:
        check_array_shape("state", state, state_shape)
        return model(params).project(state)

    def predict_projection(params: Params, projection: Array) -> Array:
        check_array_shape("projection", projection, (projection_size,))
        return model(params).predict_projection(projection)

    network = StochasticMuZeroNetwork(
        initial_inference,
        afterstate_inference,
        recurrent_inference,
        encode_chance,
        num_chance_outcomes,
        turn_logits=turn_logits if predict_turn else None,
        project=None if projection_size is None else project,
        predict_projection=None if projection_size is None else predict_projection,
    )
    return network, lambda key: draw(check_key(key))


__all__ = ["stochastic_mlp_network"]
