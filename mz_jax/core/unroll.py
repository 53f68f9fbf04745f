"""The K-step model unroll of the MuZero loss (Schrittwieser et al., 2020, Appendix G).

The representation function encodes the first observation and the dynamics function is unrolled K
steps along the stored actions as one ``jax.lax.scan``, so the program size does not grow with K.
The hidden state entering each further dynamics step has its gradient scaled by
``hidden_grad_scale`` (1/2), where the pseudocode puts ``scale_gradient``.
:func:`mz_jax.core.loss.make_loss_fn` matches the unrolled predictions to their targets.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from mz_jax.core.ops import reset_reward_carry, scale_gradient
from mz_jax.types import Array, ModelOutput, MuZeroNetwork, Params


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
