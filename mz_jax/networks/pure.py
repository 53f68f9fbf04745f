"""From an NNX MuZero module to the pure functions of :class:`mz_jax.types.MuZeroNetwork`.

Each factory defines the NNX module, keeps its ``nnx.split`` graph definition, initialises it in one
compiled program and returns its parameters as a plain nested ``dict`` of float32 arrays (string
keys, ``nnx.Param`` values only), which ``jax.grad``, optax and orbax take like any pytree. The
returned functions ``nnx.merge`` the graph with the given parameters at trace time, so they run
under plain ``jax.jit``, ``jax.grad``, ``jax.vmap`` and ``jax.lax.scan``.

Also here: the checks of the factories' arguments that are no field of :data:`mz_jax.core.validation.RULES`
(observation shape, dtype, key), the trace-time checks of the inputs, and :func:`count_params`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mz_jax.core import validation
from mz_jax.types import Array, ModelOutput, MuZeroNetwork

Params = dict[str, Any]
"""A nested ``dict`` (string keys) of the networks' ``nnx.Param`` arrays."""


def as_pure_functions(
    build: Callable[[nnx.Rngs], nnx.Module],
    *,
    observation_shape: tuple[int, ...],
    hidden_shape: tuple[int, ...],
    projection_size: int | None = None,
    value_prefix_horizon: int | None = None,
    carry_shape: tuple[int, ...] | None = None,
    turn: bool = False,
    action_size: int | None = None,
) -> tuple[MuZeroNetwork, Callable[[jax.Array | int], Params]]:
    """The pure functions of the module ``build(rngs)`` and ``init(key) -> params``.

    Nothing is compiled and no parameter is drawn until ``init`` is called; ``init`` is one
    compiled program and takes a JAX PRNG key or an int seed.

    Args:
      build: makes the module, which has ``initial_inference(observation)`` and
        ``recurrent_inference(hidden, action)`` (and ``project(hidden)`` and
        ``predict_projection(projection)`` with ``projection_size``) and holds ``nnx.Param`` state
        only.
      observation_shape: the shape of one observation, checked at trace time.
      hidden_shape: the shape of one hidden state (of its ``state`` part for a value-prefix
        network), checked at trace time.
      projection_size: None, or the size P of the projections of EfficientZero's consistency loss
        (Ye et al., 2021, §4.1), which the module computes.
      value_prefix_horizon: None, or the horizon H of a value-prefix network (§4.2), whose hidden
        state is a pair ``(state, (c, h))``; stored on the returned network.
      carry_shape: with ``value_prefix_horizon``, the shape of ``c`` and of ``h`` of one example.
      turn: the module has ``turn_logits(hidden)``, which the network then offers.
      action_size: None for a discrete action, an integer ``[B]``; D for a continuous one, a
        float ``[B, D]``; checked at trace time.
    """
    # One filter, nnx.Param: nnx.split raises if the module holds any other state (batch
    # statistics, RNG counters), which would make the functions below impure. The graph does not
    # depend on the key, and under eval_shape no parameter is drawn.
    abstract = nnx.eval_shape(lambda: build(nnx.Rngs(jax.random.key(0))))
    graphdef, _ = nnx.split(abstract, nnx.Param)

    # One compiled program draws every initial parameter; eagerly, each initializer would be
    # compiled and dispatched on its own.
    @jax.jit
    def draw(key: jax.Array) -> Params:
        return nnx.to_pure_dict(nnx.split(build(nnx.Rngs(key)), nnx.Param)[1])

    def init(key: jax.Array | int) -> Params:
        return draw(check_key(key))

    def check_hidden(hidden: Any) -> Array:
        """Checks ``hidden`` at trace time and returns its ``state`` part."""
        if value_prefix_horizon is None:
            check_array_shape("hidden", hidden, hidden_shape)
            return hidden
        if not (
            isinstance(hidden, tuple)
            and len(hidden) == 2
            and isinstance(hidden[1], tuple)
            and len(hidden[1]) == 2
        ):
            raise ValueError(
                "hidden must be a pair (state, (c, h)) for a value-prefix network; "
                f"got {jax.tree.structure(hidden)}"
            )
        state, carry = hidden
        check_array_shape("hidden", state, hidden_shape)
        for name, leaf in zip(("c", "h"), carry, strict=True):
            check_array_shape(f"hidden reward_carry {name}", leaf, carry_shape)
            if leaf.shape[0] != state.shape[0]:
                raise ValueError(
                    f"hidden reward_carry {name} must have the batch size {state.shape[0]} of "
                    f"the state; got {list(leaf.shape)}"
                )
        return state

    def initial_inference(params: Params, observation: Array) -> tuple[ModelOutput, Any]:
        check_array_shape("observation", observation, observation_shape)
        return nnx.merge(graphdef, params).initial_inference(observation)

    def recurrent_inference(params: Params, hidden: Any, action: Array) -> tuple[ModelOutput, Any]:
        state = check_hidden(hidden)
        if action_size is None:
            if action.shape != state.shape[:1] or not jnp.issubdtype(action.dtype, jnp.integer):
                raise ValueError(
                    f"action must be an integer array of shape [B] = {list(state.shape[:1])}; "
                    f"got {action.dtype}{list(action.shape)}"
                )
        elif action.shape != (*state.shape[:1], action_size) or not jnp.issubdtype(
            action.dtype, jnp.floating
        ):
            raise ValueError(
                f"action must be a float array of shape [B, D] = "
                f"{[*state.shape[:1], action_size]}; got {action.dtype}{list(action.shape)}"
            )
        return nnx.merge(graphdef, params).recurrent_inference(hidden, action)

    def project_hidden(params: Params, hidden: Any) -> Array:
        check_hidden(hidden)
        return nnx.merge(graphdef, params).project(hidden)

    def predict_projection(params: Params, projection: Array) -> Array:
        check_array_shape("projection", projection, (projection_size,))
        return nnx.merge(graphdef, params).predict_projection(projection)

    def turn_logits(params: Params, hidden: Any) -> Array:
        check_hidden(hidden)
        return nnx.merge(graphdef, params).turn_logits(hidden)

    network = MuZeroNetwork(
        initial_inference,
        recurrent_inference,
        project=None if projection_size is None else project_hidden,
        predict_projection=None if projection_size is None else predict_projection,
        value_prefix_horizon=value_prefix_horizon,
        turn_logits=turn_logits if turn else None,
    )
    return network, init


def count_params(params: Any) -> int:
    """The number of scalars in a pytree of arrays (or of ``jax.ShapeDtypeStruct``)."""
    leaves = jax.tree.leaves(params)
    return sum(math.prod(x.shape if hasattr(x, "shape") else np.shape(x)) for x in leaves)


def check_shape(name: str, shape: Any, *, rank: int | None = None) -> tuple[int, ...]:
    """``shape`` as a tuple of ints; raises ``ValueError`` unless it has positive entries (and
    ``rank`` of them, when given)."""
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if (
        dims is None
        or (rank is not None and len(dims) != rank)
        or not all(validation.is_int(d) and d >= 1 for d in dims)
    ):
        allowed = "a tuple (H, W, C), channels last," if rank == 3 else "a tuple"
        validation.fail(name, shape, f"{allowed} of positive integers", kind="argument")
    return tuple(int(d) for d in dims)


def check_dtype(dtype: Any) -> None:
    """Raises ``ValueError`` unless ``dtype`` is a floating dtype."""
    try:
        floating = jnp.issubdtype(jnp.dtype(dtype), jnp.floating)
    except TypeError:
        floating = False
    if not floating:
        validation.fail(
            "dtype", dtype, "a floating dtype (jnp.float32, jnp.bfloat16)", kind="argument"
        )


def check_key(key: Any) -> jax.Array:
    """``key`` as a JAX PRNG key: an int seed becomes ``jax.random.key(seed)``."""
    if validation.is_int(key):
        return jax.random.key(key)
    if isinstance(key, jax.Array):
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and key.shape == ():
            return key
        if key.dtype == jnp.uint32 and key.shape == (2,):  # a legacy jax.random.PRNGKey
            return key
    validation.fail("key", key, "one JAX PRNG key (jax.random.key) or an int seed", kind="argument")


def check_array_shape(name: str, x: Array, shape: tuple[int, ...]) -> None:
    """Raises ``ValueError`` unless ``x`` has the shape ``[B, *shape]``."""
    # Shapes are static, so this raises at trace time, under jit too.
    if x.ndim != len(shape) + 1 or x.shape[1:] != shape:
        expected = ", ".join(["B", *map(str, shape)])
        raise ValueError(f"{name} must have shape [{expected}]; got {list(x.shape)}")
