"""The MuZero maths, free of any training loop: the operations of the model (``scale_gradient``,
hidden-state scaling), the value and reward transforms, the K-step unroll and the losses of MuZero
and Stochastic MuZero, Sampled MuZero's proposals, prior and policy loss, the n-step targets, the
checks of a batch, and the rules of every field.

Everything here is a pure function of arrays (jit-, grad- and vmap-able); nothing imports the layers
above (search, training, the run on the host).
"""

from mz_jax.core import (
    batch_checks,
    loss,
    ops,
    sampled,
    stochastic_loss,
    targets,
    transforms,
    unroll,
    validation,
)

__all__ = [
    "batch_checks",
    "loss",
    "ops",
    "sampled",
    "stochastic_loss",
    "targets",
    "transforms",
    "unroll",
    "validation",
]
