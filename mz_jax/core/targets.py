"""Training targets of MuZero (Schrittwieser et al., 2020, Appendix G): n-step values, rewards, policies.

One sampled window of self-play data (a :class:`mz_jax.Trajectory` whose fields have leading axis
``[W]``, a contiguous slice of one environment's stream starting at the sampled state) becomes one
training example (a :class:`mz_jax.Batch` without batch axis). The maths is written for one window;
callers ``jax.vmap`` it over the sampled windows::

    batch = jax.vmap(functools.partial(make_targets, num_unroll_steps=5, td_steps=10, discount=0.997))(
        windows
    )

For unroll step ``k = 0..K`` (``K = num_unroll_steps``, ``n = td_steps``, ``γ = discount``), with
``σ(k, j) = +1`` if ``player[j] == player[k]`` else ``-1`` (two-player zero-sum games; single-player
environments have ``player`` always 0) and ``e`` the first row whose transition ended the episode:

- value: ``z_k = Σ_{j=k}^{min(k+m-1, e)} γ^(j-k) σ(k, j) r_j`` plus a bootstrap: none if the episode
  terminated at ``e <= k+m-1`` (a Monte-Carlo return, as for board games with ``n`` past the game's
  end); ``γ^(e-k+1) σ(k, e) bootstrap_value[e]`` if it was truncated there; otherwise
  ``γ^m σ(k, k+m) root_value[k+m]``. Here ``m = min(n, x_k - k)``, ``x_k`` the first row ``>= k``
  whose action was ``exploratory`` (drawn at random, not by the search): the return of the search's
  policy stops there and bootstraps from that row's search value (``stop_at_exploratory=False``:
  ``x_k = ∞``, the return of the policy that acted). Off-policy correction may give
  a window an ``n`` of its own (``td_steps_used``, at most ``td_steps``).
- reward: ``target_reward[k] = r_{k-1}`` for ``k >= 1`` (step 0's reward head is not trained); its
  mask ``reward_mask`` is 1 also at the step after a truncation, whose reward is real data.
- policy: the search policy of row ``k``.

Steps after a termination are absorbing states (value 0, reward 0 but for the final reward at ``e+1``,
policy all zeros, mask 1); steps after a truncation lie beyond the collected data (mask 0). The
consistency loss's ``observation_mask`` is 1 for the steps 1..K whose stored observation belongs to
row 0's episode.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mz_jax.types import Array, Batch, Trajectory


def _check_knobs(*, num_unroll_steps: int, td_steps: int) -> None:
    if num_unroll_steps < 1:
        raise ValueError(f"num_unroll_steps must be >= 1; got {num_unroll_steps}")
    if td_steps < 1:
        raise ValueError(f"td_steps must be >= 1; got {td_steps}")


def window_length(*, num_unroll_steps: int, td_steps: int) -> int:
    """The number of rows ``W = K + td_steps + 1`` that :func:`make_targets` needs.

    The value target of the last unroll step ``K`` bootstraps from ``root_value[K + td_steps]``.
    """
    _check_knobs(num_unroll_steps=num_unroll_steps, td_steps=td_steps)
    return num_unroll_steps + td_steps + 1


def _any_before(flags: Array) -> Array:
    """``out[j] = any(flags[:j])`` for a bool vector ``[N]`` (an exclusive cumulative or)."""
    counts = jnp.cumsum(flags.astype(jnp.int32))
    return (counts - flags.astype(jnp.int32)) > 0


def _perspective(player: Array, rows: Array, of_rows: Array) -> Array:
    """``σ``: +1 where ``player[rows]`` is ``player[of_rows]``, -1 otherwise (zero-sum sign flip)."""
    return jnp.where(player[rows] == player[of_rows], 1.0, -1.0).astype(jnp.float32)


def _episode_and_return_lengths(
    window: Trajectory,
    *,
    num_unroll_steps: int,
    td_steps: int,
    td_steps_used: Array | None,
    stop_at_exploratory: bool,
    written_rows: Array | None,
) -> tuple[Array, Array, Array]:
    """``(in_episode [W], truncated [W], m [K+1])``: which rows belong to row 0's episode, which rows
    truncated it, and ``m_k``, the rows ``z_k`` sums before it bootstraps from ``root_value[k + m_k]``
    (see the module docstring)."""
    length = window.reward.shape[0]
    terminated = window.terminated.astype(bool)
    # A row flagged both ways reached a terminal state: its value is 0, so it must not bootstrap.
    truncated = window.truncated.astype(bool) & ~terminated
    # in_episode[j]: row j belongs to row 0's episode (no earlier row ended it). Once step k is in the
    # episode, row j >= k contributes to z_k exactly when in_episode[j], so one vector serves all k.
    in_episode = ~_any_before(terminated | truncated)
    rows = np.arange(num_unroll_steps + 1)[:, None] + np.arange(td_steps)[None, :]  # [K+1, n]
    # m_k: n (or this window's n), or fewer where an exploratory action of the episode, or the
    # newest written row, comes first.
    n = td_steps if td_steps_used is None else jnp.clip(td_steps_used, 1, td_steps)
    stops = window.exploratory.astype(bool) if stop_at_exploratory else jnp.zeros_like(in_episode)
    if written_rows is not None:
        # The newest written row ends every return that reaches it, as an exploratory row does.
        stops = stops | (jnp.arange(length) >= written_rows - 1)
    exploratory = (stops & in_episode)[rows]  # [K+1, n]
    first_exploratory = jnp.where(
        jnp.any(exploratory, axis=1), jnp.argmax(exploratory, axis=1), td_steps
    )
    return in_episode, truncated, jnp.minimum(first_exploratory, n)


def bootstrap_rows(
    window: Trajectory,
    *,
    num_unroll_steps: int,
    td_steps: int,
    td_steps_used: Array | None = None,
    stop_at_exploratory: bool = True,
    written_rows: Array | None = None,
) -> Array:
    """``[K+1]`` int32: the row ``k + m_k`` whose ``root_value`` the value target ``z_k`` of
    :func:`make_targets` (called with the same arguments) bootstraps from. No other row's
    ``root_value`` is read, and this one only while it is in row 0's episode, so reanalyse refreshes
    these ``K + 1`` rows of a window, not all ``W`` (``reanalyse.refresh_values(rows=...)``)."""
    _check_knobs(num_unroll_steps=num_unroll_steps, td_steps=td_steps)
    _, _, summed = _episode_and_return_lengths(
        window,
        num_unroll_steps=num_unroll_steps,
        td_steps=td_steps,
        td_steps_used=td_steps_used,
        stop_at_exploratory=stop_at_exploratory,
        written_rows=written_rows,
    )
    return (jnp.arange(num_unroll_steps + 1) + summed).astype(jnp.int32)


def make_targets(
    window: Trajectory,
    *,
    num_unroll_steps: int,
    td_steps: int,
    discount: float,
    td_steps_used: Array | None = None,
    next_observation: bool = False,
    same_player: bool = False,
    stop_at_exploratory: bool = True,
    written_rows: Array | None = None,
) -> Batch:
    """The MuZero training targets of one sampled window (MuZero paper, Appendix G, ``make_target``).

    Args:
      window: a :class:`mz_jax.Trajectory` for one sampled sequence: every field has leading axis
        ``[W]`` with ``W >= K + td_steps + 1`` (see :func:`window_length`); row 0 is the sampled state.
        Rows past the end of its episode (the next episode of the stream) are read only to be masked
        out, with ``where``, so any value there, even NaN, is harmless.
      num_unroll_steps: ``K >= 1``, the number of steps the model is unrolled.
      td_steps: ``n >= 1``, the number of real rewards before bootstrapping from a search value; a
        value at least as long as an episode gives Monte-Carlo targets.
      discount: ``γ`` in ``[0, 1]``, a Python float (not traced).
      td_steps_used: None, or an int scalar (may be traced): this window's n, clipped to
        ``[1, td_steps]`` (off-policy correction: older data bootstraps sooner).
      next_observation: also return the observations of steps 1..K (``Batch.next_observation``),
        the targets of the consistency loss.
      same_player: also return ``Batch.target_same_player``, 1 where the player to move at step k
        (k = 1..K) is the one who moved at step k-1: the targets of a network's turn predictions.
      stop_at_exploratory: True: the return stops at the first ``exploratory`` row (``x_k`` above),
        the value of the search's policy. False: ``window.exploratory`` is ignored and the return
        runs through exploratory rows, the value of the policy that acted, exploration included.
      written_rows: None (every row is data), or an int scalar ``w >= K + 1`` (may be traced): only
        rows ``0..w-1`` are written yet (the window runs past the newest step). A return stops at
        row ``w - 1`` and bootstraps from its ``root_value``, as at an exploratory row; the rows
        after it are read only to be masked out, so any value there, even NaN, is harmless.

    Returns:
      A :class:`mz_jax.Batch` for one example, no batch axis: ``observation`` ``[*obs_shape]`` (row 0),
      ``actions`` ``[K]`` int32, ``target_value`` ``[K+1]``, ``target_reward`` ``[K+1]``,
      ``target_policy`` ``[K+1, A]``, ``mask`` ``[K+1]``, ``reward_mask`` ``[K+1]``,
      ``observation_mask`` ``[K]`` (all float32), ``weight`` ``[]`` = 1 (the replay overwrites it
      with importance-sampling weights) and, if asked for, ``next_observation`` ``[K, *obs_shape]``
      and ``target_same_player`` ``[K]``. Values and rewards are from the
      perspective of the player to move at each step (rewards: of the player who took the action).

    Raises:
      ValueError: for a knob out of range, a field whose rank or leading axis does not fit, or a
        window shorter than ``K + td_steps + 1``.
    """
    _check_window(window, num_unroll_steps=num_unroll_steps, td_steps=td_steps, discount=discount)
    num_steps = num_unroll_steps + 1
    player = window.player
    in_episode, truncated, summed = _episode_and_return_lengths(
        window,
        num_unroll_steps=num_unroll_steps,
        td_steps=td_steps,
        td_steps_used=td_steps_used,
        stop_at_exploratory=stop_at_exploratory,
        written_rows=written_rows,
    )
    mask, reward_mask = _masks(truncated, in_episode, num_steps=num_steps)
    target_value = _value_targets(
        window, in_episode, truncated, summed, td_steps=td_steps, discount=discount
    )
    return Batch(
        observation=window.observation[0],
        actions=window.action[:num_unroll_steps].astype(jnp.int32),
        target_value=target_value.astype(jnp.float32),
        target_reward=_reward_targets(window.reward, in_episode, num_steps=num_steps),
        target_policy=jnp.where(
            in_episode[:num_steps, None], window.policy[:num_steps].astype(jnp.float32), 0.0
        ),
        mask=mask,
        weight=jnp.ones((), jnp.float32),
        reward_mask=reward_mask,
        next_observation=window.observation[1:num_steps] if next_observation else None,
        observation_mask=in_episode[1:num_steps].astype(jnp.float32),
        target_same_player=(
            (player[1:num_steps] == player[: num_steps - 1]).astype(jnp.float32)
            if same_player
            else None
        ),
    )


def _check_window(
    window: Trajectory, *, num_unroll_steps: int, td_steps: int, discount: float
) -> None:
    """Refuses, with a ValueError, knobs out of range and a window that is not one window of at
    least ``K + td_steps + 1`` rows (every field with the leading axis ``[W]`` of ``reward``)."""
    _check_knobs(num_unroll_steps=num_unroll_steps, td_steps=td_steps)
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"discount must be in [0, 1]; got {discount}")
    if window.reward.ndim != 1:
        raise ValueError(
            f"window.reward must have shape [W] (one window; vmap over a batch of windows); "
            f"got shape {window.reward.shape}"
        )
    length = window.reward.shape[0]
    for name, field in window._asdict().items():
        if field.ndim < 1 or field.shape[0] != length:
            raise ValueError(
                f"window.{name} must have leading axis W = {length} like window.reward; "
                f"got shape {field.shape}"
            )
    needed = window_length(num_unroll_steps=num_unroll_steps, td_steps=td_steps)
    if length < needed:
        raise ValueError(
            f"window has W = {length} rows; num_unroll_steps={num_unroll_steps} and "
            f"td_steps={td_steps} need W >= num_unroll_steps + td_steps + 1 = {needed}"
        )


def _value_targets(
    window: Trajectory,
    in_episode: Array,
    truncated: Array,
    summed: Array,
    *,
    td_steps: int,
    discount: float,
) -> Array:
    """``z_k`` of the module docstring, ``[K+1]`` float32 (0 for steps outside row 0's episode):
    the ``m_k = summed[k]`` rewards of rows ``k..k+m_k-1`` (a truncating row's with its
    ``bootstrap_value``), then ``root_value[k + m_k]`` while that row is in the episode.
    ``in_episode`` and ``truncated`` are ``[W]`` bool, as :func:`_episode_and_return_lengths`
    gives them."""
    num_steps = summed.shape[0]
    reward = window.reward.astype(jnp.float32)
    root_value = window.root_value.astype(jnp.float32)
    player = window.player
    steps = np.arange(num_steps)  # unroll step k, and the row it starts from
    offsets = np.arange(td_steps)
    rows = steps[:, None] + offsets[None, :]  # [K+1, n]: the rows j = k..k+n-1 of z_k
    powers = jnp.asarray(np.asarray([discount**i for i in range(td_steps + 1)], np.float32))  # γ^i

    # A truncating row's bootstrap is one discount beyond its reward and from the same player's
    # perspective, so it joins that row's reward: r_j + γ bootstrap_value[j].
    step_return = reward + discount * jnp.where(
        truncated, window.bootstrap_value.astype(jnp.float32), 0.0
    )
    n_step = jnp.sum(
        jnp.where(
            in_episode[rows] & (offsets[None, :] < summed[:, None]),
            powers[:td_steps] * _perspective(player, rows, steps[:, None]) * step_return[rows],
            0.0,
        ),
        axis=1,
    )
    # root_value[k+m] is of the same episode only if rows k..k+m-1 did not end it.
    read = steps + summed  # the rows of bootstrap_rows()
    bootstrap = jnp.where(
        in_episode[read],
        powers[summed] * _perspective(player, read, steps) * root_value[read],
        0.0,
    )
    return jnp.where(in_episode[:num_steps], n_step + bootstrap, 0.0)


def _reward_targets(reward: Array, in_episode: Array, *, num_steps: int) -> Array:
    """``[K+1]`` float32: 0 at step 0 (its reward head is not trained), then ``r_{k-1}``.

    The reward of the action at row k-1 is data while that row is in the episode (``in_episode``
    ``[W]``): this keeps the final reward at step e+1 (an absorbing state after termination) and
    zeroes the steps after it."""
    reward = reward.astype(jnp.float32)
    taken_reward = jnp.where(in_episode[: num_steps - 1], reward[: num_steps - 1], 0.0)
    return jnp.concatenate([jnp.zeros((1,), jnp.float32), taken_reward])


def _masks(truncated: Array, in_episode: Array, *, num_steps: int) -> tuple[Array, Array]:
    """``(mask, reward_mask)``, each ``[K+1]`` float32, from the ``[W]`` bool flags.

    Absorbing states after a termination are trained (mask 1); after a truncation there is no data
    (mask 0), but for the reward of the truncating transition itself, which the step after it is
    trained on (``reward_mask`` 1 there)."""
    truncated_before = _any_before(truncated & in_episode)
    mask = (~truncated_before[:num_steps]).astype(jnp.float32)
    reward_mask = jnp.concatenate(
        [mask[:1], (~truncated_before[: num_steps - 1]).astype(jnp.float32)]
    )
    return mask, reward_mask
