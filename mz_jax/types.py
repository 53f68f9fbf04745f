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
        transformed space of :func:`mz_jax.core.transforms.h`; from the perspective of the player to move.
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
      project: optional, ``(params, hidden) -> [B, P]``: the projection network of EfficientZero's
        self-supervised consistency loss (Ye et al., 2021, §4.1) on a hidden state as the inference
        functions return it. Needed only for ``consistency_loss_weight > 0``.
      predict_projection: optional, ``(params, projection[B, P]) -> [B, P]``: the prediction head on
        top of ``project``, applied only on the branch of the unrolled (dynamics) hidden states.
      value_prefix_horizon: None for a network whose ``reward_logits`` predict the reward of the
        last transition (MuZero). An integer H for a value-prefix network (EfficientZero, §4.2):
        its hidden state is a pair ``(state, reward_carry)`` (``initial_inference`` returns a zero
        ``reward_carry``), ``reward_logits`` of ``recurrent_inference`` predict the sum of rewards
        since the last reset, and the caller (the loss, the search) resets ``reward_carry`` to
        zeros after every H-th step of an unroll or of a path from the root.
      turn_logits: optional, ``(params, hidden) -> [B]``: for two-player games where the player who
        moved can move again (backgammon), the logit that the player to move in ``hidden`` (a state
        the dynamics reached) is the one who made the move that led there. The search then flips
        the value's sign between plies only where it is <= 0, and the loss trains it against
        ``Batch.target_same_player``. None: the players alternate at every move.
    """

    initial_inference: Callable[[Params, Array], tuple[ModelOutput, Any]]
    recurrent_inference: Callable[[Params, Any, Array], tuple[ModelOutput, Any]]
    project: Callable[[Params, Any], Array] | None = None
    predict_projection: Callable[[Params, Array], Array] | None = None
    value_prefix_horizon: int | None = None
    turn_logits: Callable[[Params, Any], Array] | None = None


class AfterstateOutput(NamedTuple):
    """What the afterstate prediction function of Stochastic MuZero predicts for B afterstates.

    Attributes:
      value_logits: ``[B, Nv]`` logits of the afterstate value ``Q(as)`` over the value support, in
        the transformed space of :func:`mz_jax.core.transforms.h`; from the perspective of the player who
        acted (the afterstate is the position after the action, before chance moves).
      chance_logits: ``[B, C]`` logits of ``σ``, the distribution over the C chance outcomes that
        follow the afterstate.
    """

    value_logits: Array
    chance_logits: Array


class StochasticMuZeroNetwork(NamedTuple):
    """The six functions of Stochastic MuZero (Antonoglou et al., 2022) as four pure functions.

    A decision step ``s --a--> as`` is deterministic and has no reward; a chance step
    ``as --c--> s'`` carries the environment's randomness and the reward. A chance outcome is a
    one-hot code ``c`` of size C (float, ``[B, C]``): in training the encoder's code of the observed
    transition, in the search one of the C outcomes, weighted by ``σ``.

    Attributes:
      initial_inference: ``(params, observation[B, ...]) -> (ModelOutput, state[B, ...])``; the
        representation ``h`` followed by the prediction ``f`` (``reward_logits`` are not trained).
      afterstate_inference: ``(params, state, action[B] int32) -> (AfterstateOutput,
        afterstate[B, ...])``; the afterstate dynamics ``φ`` followed by the afterstate prediction
        ``ψ``.
      recurrent_inference: ``(params, afterstate, code[B, C] float) -> (ModelOutput, state)``; the
        chance dynamics ``g`` (the next state and the reward of the whole transition
        ``s --a, c--> s'``, in ``reward_logits``) followed by the prediction ``f``.
      encode_chance: ``(params, observation[B, ...], next_observation[B, ...]) -> [B, C]``; the
        encoder ``e``'s logits for the chance outcome of the transition between two consecutive
        observations. The loss turns them into a one-hot code with the straight-through estimator
        (:func:`mz_jax.core.unroll.chance_code`); an encoder may ignore either argument.
      num_chance_outcomes: C, the size of the codebook of one-hot codes.
      turn_logits: optional, ``(params, state) -> [B]``, as in :class:`MuZeroNetwork`: whether the
        player who moved moves again after the chance event (backgammon: while dice are left).
      project, predict_projection: optional, as in :class:`MuZeroNetwork`: EfficientZero's
        consistency loss on the states the chance dynamics reach.
    """

    initial_inference: Callable[[Params, Array], tuple[ModelOutput, Any]]
    afterstate_inference: Callable[[Params, Any, Array], tuple[AfterstateOutput, Any]]
    recurrent_inference: Callable[[Params, Any, Array], tuple[ModelOutput, Any]]
    encode_chance: Callable[[Params, Array, Array], Array]
    num_chance_outcomes: int
    turn_logits: Callable[[Params, Any], Array] | None = None
    project: Callable[[Params, Any], Array] | None = None
    predict_projection: Callable[[Params, Array], Array] | None = None


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
      reward_mask: optional ``[B, K+1]``, the mask of the reward term where it differs from ``mask``:
        at a truncation the reward of the last real transition is data although the state it led to
        is not (``mask`` 0 there). None: ``mask``.
      next_observation: optional ``[B, K, ...]``, the stored observations at steps 1..K, the
        targets of the consistency loss. Needed only for ``consistency_loss_weight > 0``.
      observation_mask: optional ``[B, K]``, 1 where ``next_observation[:, k-1]`` belongs to the
        episode of step 0 (the consistency loss's mask). None: ``mask[:, 1:]``.
      target_same_player: optional ``[B, K]``, 1 where the player to move at step k (k = 1..K) is
        the player who moved at step k-1, else 0: the targets of ``ModelOutput.turn_logits``
        (masked by ``observation_mask``). Needed only for a network that predicts turns.
    """

    observation: Array
    actions: Array
    target_value: Array
    target_reward: Array
    target_policy: Array
    mask: Array
    weight: Array
    reward_mask: Array | None = None
    next_observation: Array | None = None
    observation_mask: Array | None = None
    target_same_player: Array | None = None


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
      exploratory: ``[...]`` bool, the action was drawn at random (``random_action_probability``),
        not by the search: the n-step value targets stop there.
      final_observation: ``[..., *obs_shape]`` float32 where ``truncated``: the observation the
        transition reached, so that reanalyse can refresh ``bootstrap_value``; zeros elsewhere.
        Where it is not recorded, a placeholder 0 of shape ``[...]`` (see
        :func:`mz_jax.training.actor.transition_spec`).
      final_player: ``[...]`` int32 where ``truncated``: the player to move at
        ``final_observation``; 0 elsewhere.
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
    exploratory: Array
    final_observation: Array
    final_player: Array
