"""Training on mirror images of the data: :func:`reflect_batch`.

Where an environment has a mirror symmetry (:class:`mz_jax.envs.Reflection`: CartPole, Acrobot,
Catch, connect four, tic-tac-toe), the mirror image of a sampled sequence is a sequence the
environment could have produced, with the same rewards and values and the search policies mirrored
too. ``TrainConfig.augment_reflection`` mirrors each sequence of every batch with probability 1/2,
so the model learns both halves of the state space from either (AlphaGo Zero trained on Go's eight
symmetries the same way). Targets are computed before, from the stored data, and the reflection
leaves the value and reward targets as they are.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.envs import Reflection
from mz_jax.types import Array, Batch


def reflect_batch(batch: Batch, flip: Array, reflection: Reflection) -> Batch:
    """``batch`` with the sequences where ``flip`` is True replaced by their mirror images.

    The observations (``observation``, and ``next_observation`` where the batch has them) go
    through ``reflection.observation``; each action ``a`` becomes ``reflection.actions[a]``, and
    the policy targets follow their actions (the mirrored policy gives ``reflection.actions[a]``
    the probability the stored one gave ``a``). Values, rewards, masks, weights and whose turn it
    is are the same for a sequence and its mirror image.

    Args:
      batch: B training sequences (:class:`mz_jax.types.Batch`).
      flip: ``[B]`` bool, which sequences to mirror.
      reflection: the environment's mirror symmetry.
    """
    actions = np.asarray(reflection.actions)
    # The policy target of mirrored action b is the stored one of the action whose image is b.
    preimage = np.argsort(actions)

    def choose(mirrored: Array, stored: Array) -> Array:
        mask = flip.reshape(flip.shape + (1,) * (stored.ndim - 1))
        return jnp.where(mask, mirrored, stored)

    mirror = jax.vmap(reflection.observation)
    next_observation = batch.next_observation
    if next_observation is not None:
        next_observation = choose(jax.vmap(mirror)(next_observation), next_observation)
    return batch._replace(
        observation=choose(mirror(batch.observation), batch.observation),
        actions=choose(jnp.asarray(actions)[batch.actions], batch.actions),
        target_policy=choose(batch.target_policy[..., preimage], batch.target_policy),
        next_observation=next_observation,
    )
