"""The public data types of mz_jax: network outputs, the network pair, and a training batch.

A network is any pair of pure functions, so the loss and the search work with Flax, Haiku, Equinox or
plain ``jax.numpy`` models alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

Array = jax.Array
Params = Any


class ModelOutput(NamedTuple):
    """What one inference of a MuZero network predicts for a batch of B states.

    Attributes:
      value_logits: ``[B, Nv]`` logits over the value support ``[-S, S]`` (``Nv = 2S + 1``), in the
        transformed space of :func:`mz_jax.transforms.h`; from the perspective of the player to move.
      reward_logits: ``[B, Nr]`` logits over the reward support, for the transition that led here
        (meaningless at the root, where it is not trained).
      policy_logits: ``[B, A]`` prior logits over the A actions.
    """

    value_logits: Array
    reward_logits: Array
    policy_logits: Array


class MuZeroNetwork(NamedTuple):
    """The representation, prediction and dynamics functions of MuZero as two pure functions.

    Attributes:
      initial_inference: ``(params, observation[B, ...]) -> (ModelOutput, hidden[B, ...])``; the
        representation function followed by the prediction function.
      recurrent_inference: ``(params, hidden[B, ...], action[B] int32) -> (ModelOutput, hidden[B, ...])``;
        the dynamics function followed by the prediction function on the new hidden state.
    """

    initial_inference: Callable[[Params, Array], tuple[ModelOutput, Array]]
    recurrent_inference: Callable[[Params, Array, Array], tuple[ModelOutput, Array]]


class Batch(NamedTuple):
    """A batch of B training sequences for a K-step unroll (MuZero paper, Appendix G).

    Attributes:
      observation: ``[B, ...]`` observation at the first step of each sequence.
      actions: ``[B, K]`` int32; ``actions[:, k]`` is taken at unroll step k.
      target_value: ``[B, K+1]`` scalar value targets (n-step bootstrapped), from the perspective of the
        player to move at each step.
      target_reward: ``[B, K+1]`` scalar reward targets; ``target_reward[:, k]`` is the reward of
        ``actions[:, k-1]``. Column 0 is ignored (the reward head of step 0 is not trained).
      target_policy: ``[B, K+1, A]`` search policies; all zeros after termination (no policy loss).
      mask: ``[B, K+1]`` 1 where the step is part of the data or an absorbing state after termination;
        0 beyond the collected data of a truncated episode.
      weight: ``[B]`` per-example loss weights (importance-sampling weights of prioritized replay).
    """

    observation: Array
    actions: Array
    target_value: Array
    target_reward: Array
    target_policy: Array
    mask: Array
    weight: Array


class Trajectory(NamedTuple):
    """Self-play data as the actor records it and the replay stores it.

    Leading axes are time-major: ``[T, E]`` from a rollout of T steps over E environments, ``[L, E]`` in
    replay, ``[W]`` for one sampled window. Each environment's column is one continuous stream across
    episode boundaries (environments reset automatically); ``terminated``/``truncated`` mark where an
    episode ends. Row t describes the state observed at step t and the transition taken from it.

    Attributes:
      observation: ``[..., *obs_shape]`` the observation at step t.
      action: ``[...]`` int32, the action taken at step t.
      reward: ``[...]`` float32, the reward of that action, from the perspective of ``player`` at step t.
      terminated: ``[...]`` bool, the transition from step t ended the episode in a terminal state.
      truncated: ``[...]`` bool, the transition from step t ended the episode by a time limit (and did
        not terminate it).
      policy: ``[..., A]`` float32, the search policy at step t (visit distribution or Gumbel action
        weights): the policy target.
      root_value: ``[...]`` float32, the search value at step t from the perspective of ``player``.
      player: ``[...]`` int32, the player to move at step t (always 0 in single-player environments).
      legal_action_mask: ``[..., A]`` bool, the legal actions at step t.
      bootstrap_value: ``[...]`` float32, where ``truncated``: the network's value of the state the
        transition reached (which the stream does not hold, the environment having reset), from the
        perspective of ``player`` at step t; 0 elsewhere.
    """

    observation: Array
    action: Array
    reward: Array
    terminated: Array
    truncated: Array
    policy: Array
    root_value: Array
    player: Array
    legal_action_mask: Array
    bootstrap_value: Array
