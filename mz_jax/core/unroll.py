"""The K-step model unrolls of the losses: MuZero's (Schrittwieser et al., 2020, Appendix G) and
Stochastic MuZero's, with chance outcomes (Antonoglou et al., 2022).

The representation function encodes the first observation and the dynamics function is unrolled K
steps along the stored actions as one ``jax.lax.scan``, so the program size does not grow with K.
The hidden state entering each further dynamics step has its gradient scaled by
``hidden_grad_scale`` (1/2), where the pseudocode puts ``scale_gradient``. Stochastic MuZero's
unroll splits each step into the afterstate dynamics and the chance dynamics, fed the one-hot code
of the observed outcome (:func:`chance_code`, a VQ-VAE's straight-through code).
:func:`mz_jax.core.loss.make_loss_fn` and :func:`mz_jax.core.stochastic_loss.make_stochastic_loss_fn`
match the unrolled predictions to their targets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from mz_jax.core.ops import reset_reward_carry, scale_gradient
from mz_jax.types import (
    AfterstateOutput,
    Array,
    ModelOutput,
    MuZeroNetwork,
    Params,
    StochasticMuZeroNetwork,
)


class Unroll(NamedTuple):
    """What :func:`unroll_model` returns.

    Attributes:
      predictions: the predictions of steps 0..K stacked as ``[B, K+1, ...]``.
      hidden: the hidden states ``s_1..s_K`` the dynamics function produced, stacked as
        ``[K, B, ...]`` (before the gradient scaling between steps, as the predictions see them).
    """

    predictions: ModelOutput
    hidden: Any


def unroll_model(
    network: MuZeroNetwork,
    params: Params,
    observation: Array,
    actions: Array,
    *,
    hidden_grad_scale: float = 0.5,
    remat: bool = False,
    unroll: int | bool = 1,
) -> Unroll:
    """Runs the model K steps along ``actions[B, K]`` as one ``jax.lax.scan``.

    ``h_0 = s_0`` and ``h_k = scale_gradient(s_k, hidden_grad_scale)`` for k >= 1, where the pseudocode
    puts it. The step-0 reward logits are the initial inference's, which are never trained. For a
    value-prefix network (``network.value_prefix_horizon`` H) the LSTM carry of the hidden state is
    zeroed after every step k with ``k % H == 0``, as the search does at those depths.
    """
    horizon = network.value_prefix_horizon

    def body(hidden, inputs):
        action, step = inputs
        output, next_hidden = network.recurrent_inference(params, hidden, action)
        carried = next_hidden
        if horizon is not None:
            carried = reset_reward_carry(next_hidden, (step + 1) % horizon == 0)
        return scale_gradient(carried, hidden_grad_scale), (output, next_hidden)

    if remat:
        body = jax.checkpoint(body)
    output_0, hidden_0 = network.initial_inference(params, observation)
    steps = jnp.arange(actions.shape[1], dtype=jnp.int32)
    _, (outputs, hidden) = jax.lax.scan(body, hidden_0, (actions.T, steps), unroll=unroll)
    predictions = jax.tree.map(
        lambda first, rest: jnp.concatenate([first[:, None], jnp.swapaxes(rest, 0, 1)], axis=1),
        output_0,
        outputs,
    )
    return Unroll(predictions, hidden)


class ChanceCode(NamedTuple):
    """The encoder's chance outcome as the loss uses it.

    Attributes:
      code: ``[..., C]`` float32, ``one_hot(argmax(logits))`` on the forward pass; its gradient is
        passed unchanged to ``encoding`` (the straight-through estimator: ``d code / d encoding``
        is the identity).
      encoding: ``[..., C]`` float32, the encoder's output ``c^e`` that is quantised: the logits
        themselves, or ``softmax(logits)`` (see :func:`chance_code`); the commitment term pulls it
        towards ``code``.
      soft: ``[..., C]`` float32, ``softmax(logits)``, whose batch mean :func:`code_usage_entropy`
        reads.
    """

    code: Array
    encoding: Array
    soft: Array


STRAIGHT_THROUGH = ("logits", "softmax")
"""What the chance code's straight-through gradient reaches (:func:`chance_code`)."""


def check_straight_through(straight_through: str) -> None:
    if straight_through not in STRAIGHT_THROUGH:
        raise ValueError(
            f"straight_through must be one of {STRAIGHT_THROUGH}; got {straight_through!r}"
        )


def chance_code(logits: Array, straight_through: str = "softmax") -> ChanceCode:
    """Quantises encoder outputs ``[..., C]`` to the nearest one-hot code, straight-through.

    The codebook is the C one-hot vectors, so the code nearest to an encoding ``c^e`` (in
    Euclidean distance, ``||c^e||^2 - 2 c^e_i + 1``) is the one-hot of its argmax (ties to the
    lowest index), whether ``c^e`` is the logits or their softmax. ``code = one_hot + c^e -
    sg(c^e)`` is the one-hot exactly on the forward pass, however large the logits, and has the
    identity's gradient with respect to ``c^e``:

    * ``"logits"``: ``c^e`` is the encoder's output itself (VQ-VAE's nearest-code quantisation), so
      every code's logit gets the gradient of the code's input to the dynamics, chosen or not;
    * ``"softmax"``: ``c^e = softmax(logits)``, whose Jacobian passes almost nothing to a code of
      probability near 0: once the logits are large a code the encoder has stopped picking gets
      no gradient, and is never picked again (measured on backgammon: benchmarks/tuning/stochastic_muzero.md).
    """
    check_straight_through(straight_through)
    logits = logits.astype(jnp.float32)
    soft = jax.nn.softmax(logits, axis=-1)
    encoding = logits if straight_through == "logits" else soft
    one_hot = jax.nn.one_hot(jnp.argmax(logits, axis=-1), logits.shape[-1], dtype=jnp.float32)
    code = one_hot + (encoding - jax.lax.stop_gradient(encoding))
    return ChanceCode(code=code, encoding=encoding, soft=soft)


class StochasticUnroll(NamedTuple):
    """What :func:`unroll_stochastic_model` returns.

    Attributes:
      predictions: the state predictions of steps 0..K stacked as ``[B, K+1, ...]`` (a
        :class:`~mz_jax.types.ModelOutput`; the reward of step k is that of the transition into it).
      afterstates: the afterstate predictions of steps 0..K-1 as ``[B, K, ...]`` (the afterstate
        of step k follows the action ``actions[:, k]``).
      codes: the chance codes of the transitions into steps 1..K, ``[B, K, C]``.
      states: the states ``s_1..s_K`` the chance dynamics produced, ``[K, B, ...]``.
    """

    predictions: ModelOutput
    afterstates: AfterstateOutput
    codes: ChanceCode
    states: Array


def unroll_stochastic_model(
    network: StochasticMuZeroNetwork,
    params: Params,
    observations: Array,
    actions: Array,
    *,
    hidden_grad_scale: float = 0.5,
    straight_through: str = "softmax",
    chance_outcome: Callable[[Array, Array, Array], Array] | None = None,
    unroll: int | bool = 1,
) -> StochasticUnroll:
    """Runs the model K steps along ``actions[B, K]`` with the observed chance outcomes.

    ``observations`` is ``[B, K+1, ...]``: the observation of step 0 and those of steps 1..K. The
    encoder codes every consecutive pair at once; then one ``jax.lax.scan`` runs, for k = 0..K-1,
    ``as_k = φ(h_k, a_k)`` and ``s_{k+1} = g(as_k, c_{k+1})``, with ``h_0 = s_0`` and
    ``h_k = scale_gradient(s_k, hidden_grad_scale)``. ``unroll`` is the scan's (True: all K steps
    as straight-line code). ``straight_through`` is :func:`chance_code`'s. With
    ``chance_outcome(observation, action, next_observation) -> int`` (unbatched), the codes are the
    one-hots of the outcomes it names instead, and the encoder is not run.
    """
    batch_size, num_steps = actions.shape
    flat = lambda x: x.reshape(batch_size * num_steps, *x.shape[2:])
    before, after = flat(observations[:, :-1]), flat(observations[:, 1:])
    if chance_outcome is None:
        codes = chance_code(network.encode_chance(params, before, after), straight_through)
    else:
        outcome = jax.vmap(chance_outcome)(before, actions.reshape(-1), after)
        code = jax.nn.one_hot(outcome, network.num_chance_outcomes, dtype=jnp.float32)
        codes = ChanceCode(code=code, encoding=code, soft=code)
    codes = jax.tree.map(lambda x: x.reshape(batch_size, num_steps, *x.shape[1:]), codes)

    def body(state, inputs):
        action, code = inputs
        afterstate_output, afterstate = network.afterstate_inference(params, state, action)
        output, next_state = network.recurrent_inference(params, afterstate, code)
        return scale_gradient(next_state, hidden_grad_scale), (
            afterstate_output,
            output,
            next_state,
        )

    output_0, state_0 = network.initial_inference(params, observations[:, 0])
    _, (afterstates, outputs, states) = jax.lax.scan(
        body, state_0, (actions.T, jnp.swapaxes(codes.code, 0, 1)), unroll=unroll
    )
    batch_major = lambda x: jnp.swapaxes(x, 0, 1)
    predictions = jax.tree.map(
        lambda first, rest: jnp.concatenate([first[:, None], batch_major(rest)], axis=1),
        output_0,
        outputs,
    )
    return StochasticUnroll(predictions, jax.tree.map(batch_major, afterstates), codes, states)
