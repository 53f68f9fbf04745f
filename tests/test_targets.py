"""Tests of mz_jax.core.targets: every expected number is worked out by hand in the comments beside it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.core.targets import make_targets, window_length
from mz_jax.types import Batch, Trajectory

NAN = float("nan")

# The single-player and small two-player cases: K = 3, n = 2, γ = 0.5, so window_length = 6; the
# windows have one row more, which must be ignored.
K, N, GAMMA, W = 3, 2, 0.5, 7
POLICY = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.5, 0.5, 0.0],
        [0.0, 0.5, 0.5],
        [0.5, 0.0, 0.5],
        [0.25, 0.25, 0.5],
    ],
    np.float32,
)
ZEROS_3 = [0.0, 0.0, 0.0]

# Tic-tac-toe: K = 7, n = 9 (longer than any game is left: Monte-Carlo), γ = 1, W = 7 + 9 + 1 = 17.
TTT_K, TTT_N, TTT_GAMMA, TTT_W = 7, 9, 1.0, 17
# Cells 0..8 row by row. X (player 0) forks with 6 and wins on 6-7-8 at the 7th move.
X_WINS = [0, 4, 8, 2, 6, 3, 7]
# Every threat blocked; the 9th move fills the board: X 0 1 5 6 8, O 2 3 4 7.
DRAW = [0, 4, 8, 2, 6, 3, 5, 7, 1]
# The stream goes on with the next games (a draw, then a win); their rows carry a (garbage) reward of 1
# so that a leak would show.
NEXT_MOVES = DRAW + X_WINS
NEXT_PLAYERS = [t % 2 for t in range(len(DRAW))] + [t % 2 for t in range(len(X_WINS))]


def _window(
    *,
    reward,
    root_value,
    policy=POLICY,
    action=None,
    player=None,
    terminated_at=None,
    truncated_at=None,
    bootstrap_value=None,
    exploratory_at=None,
) -> Trajectory:
    """A Trajectory of one window; observation row t is [t, -t], so row 0 is recognisable."""
    length = len(reward)
    rows = np.arange(length)
    terminated = np.zeros(length, bool)
    truncated = np.zeros(length, bool)
    if terminated_at is not None:
        terminated[terminated_at] = True
    if truncated_at is not None:
        truncated[truncated_at] = True
    window = Trajectory(
        observation=np.stack([rows, -rows], axis=1).astype(np.float32),
        action=(rows % policy.shape[1] if action is None else np.asarray(action)).astype(np.int32),
        reward=np.asarray(reward, np.float32),
        terminated=terminated,
        truncated=truncated,
        policy=np.asarray(policy, np.float32),
        root_value=np.asarray(root_value, np.float32),
        player=np.zeros(length, np.int32) if player is None else np.asarray(player, np.int32),
        legal_action_mask=np.ones(policy.shape, bool),
        bootstrap_value=(
            np.zeros(length, np.float32)
            if bootstrap_value is None
            else np.asarray(bootstrap_value, np.float32)
        ),
        exploratory=np.isin(rows, [] if exploratory_at is None else exploratory_at),
        final_observation=np.zeros(length, np.float32),
        final_player=np.zeros(length, np.int32),
    )
    return jax.tree.map(jnp.asarray, window)


def _tic_tac_toe_window(game: list[int], *, start: int, final_reward: float) -> Trajectory:
    """Rows ``start..`` of ``game`` (X = player 0 moves first), then the next games; TTT_W rows."""
    moves = game[start:] + NEXT_MOVES
    length = len(game) - start  # rows of the sampled game in the window
    players = [(start + t) % 2 for t in range(length)] + NEXT_PLAYERS
    reward = [0.0] * (length - 1) + [final_reward] + [1.0] * len(NEXT_MOVES)
    return _window(
        reward=reward[:TTT_W],
        root_value=[0.3] * TTT_W,  # Monte-Carlo targets must never read it
        policy=np.eye(9, dtype=np.float32)[moves[:TTT_W]],  # the search chose the move played
        action=moves[:TTT_W],
        player=players[:TTT_W],
        terminated_at=length - 1,
    )


def _small(window: Trajectory) -> Batch:
    return make_targets(window, num_unroll_steps=K, td_steps=N, discount=GAMMA)


def _tic_tac_toe(window: Trajectory) -> Batch:
    return make_targets(window, num_unroll_steps=TTT_K, td_steps=TTT_N, discount=TTT_GAMMA)


def _assert_batch(batch: Batch, window: Trajectory, *, actions, value, reward, policy, mask):
    np.testing.assert_array_equal(batch.observation, window.observation[0])
    assert batch.actions.dtype == jnp.int32
    np.testing.assert_array_equal(batch.actions, actions)
    np.testing.assert_allclose(batch.target_value, value, rtol=1e-6)
    np.testing.assert_allclose(batch.target_reward, reward, rtol=1e-6)
    np.testing.assert_allclose(batch.target_policy, policy, rtol=1e-6)
    np.testing.assert_array_equal(batch.mask, mask)
    for target in (batch.target_value, batch.target_reward, batch.target_policy, batch.mask):
        assert target.dtype == jnp.float32
    assert batch.weight.shape == () and batch.weight == 1.0


# Rows 0..2 are the episode (terminated at row 2); rows 3.. are the next episode, NaN where a leak
# through a multiplication by 0 would still show.
TERMINATED = _window(
    reward=[1.0, 2.0, 3.0, -100.0, -100.0, -100.0, -100.0],
    root_value=[10.0, 20.0, 30.0, NAN, NAN, NAN, NAN],
    policy=np.concatenate([POLICY[:3], np.full((4, 3), NAN, np.float32)]),
    terminated_at=2,
)
# Truncated at row 1; bootstrap_value[1] = 8 is the value of the state the time limit cut off.
TRUNCATED = _window(
    reward=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    root_value=[10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0],
    truncated_at=1,
    bootstrap_value=[0.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0],
)
ONGOING = _window(
    reward=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    root_value=[10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0],
)
# Two players that do not strictly alternate (player 1 moves twice at rows 1, 2).
TWO_PLAYER = _window(
    reward=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    root_value=[10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0],
    player=[0, 1, 1, 0, 1, 0, 0],
)
# Alternating players, truncated at row 1 (player 1's move); bootstrap_value[1] is player 1's view.
TWO_PLAYER_TRUNCATED = _window(
    reward=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    root_value=[10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0],
    player=[0, 1, 0, 1, 0, 1, 0],
    truncated_at=1,
    bootstrap_value=[0.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0],
)
SMALL_WINDOWS = [TERMINATED, TRUNCATED, ONGOING, TWO_PLAYER, TWO_PLAYER_TRUNCATED]

X_WINS_FROM_START = _tic_tac_toe_window(X_WINS, start=0, final_reward=1.0)
X_WINS_FROM_O_MOVE = _tic_tac_toe_window(X_WINS, start=1, final_reward=1.0)
DRAW_FROM_THIRD_MOVE = _tic_tac_toe_window(DRAW, start=2, final_reward=0.0)
TIC_TAC_TOE_WINDOWS = [X_WINS_FROM_START, X_WINS_FROM_O_MOVE, DRAW_FROM_THIRD_MOVE]


def test_window_length():
    assert window_length(num_unroll_steps=3, td_steps=2) == 6  # 3 + 2 + 1
    assert window_length(num_unroll_steps=5, td_steps=10) == 16  # 5 + 10 + 1


def test_single_player_termination_inside_window():
    _assert_batch(
        _small(TERMINATED),
        TERMINATED,
        actions=[0, 1, 2],
        value=[
            9.5,  # z_0 = r0 + γ r1 + γ² root_value[2] = 1 + 0.5·2 + 0.25·30 (row 2 still in the episode)
            3.5,  # z_1 = r1 + γ r2 = 2 + 0.5·3; terminated at row 2 = k+n-1: no bootstrap
            3.0,  # z_2 = r2 = 3; terminated at row 2
            0.0,  # step 3: absorbing
        ],
        reward=[
            0.0,
            1.0,
            2.0,
            3.0,
        ],  # [not trained, r0, r1, r2 (the final reward, at step e+1 = 3)]
        policy=[POLICY[0], POLICY[1], POLICY[2], ZEROS_3],
        mask=[1.0, 1.0, 1.0, 1.0],  # absorbing states are trained
    )


def test_single_player_truncation_bootstraps_and_masks_beyond():
    _assert_batch(
        _small(TRUNCATED),
        TRUNCATED,
        actions=[0, 1, 2],
        value=[
            4.0,  # z_0 = r0 + γ r1 + γ² bootstrap_value[1] = 1 + 0.5·2 + 0.25·8
            6.0,  # z_1 = r1 + γ bootstrap_value[1] = 2 + 0.5·8
            0.0,  # beyond the data
            0.0,
        ],
        # target_reward[2] = r1 is kept (the reward of the truncating transition), but masked.
        reward=[0.0, 1.0, 2.0, 0.0],
        policy=[POLICY[0], POLICY[1], ZEROS_3, ZEROS_3],
        mask=[1.0, 1.0, 0.0, 0.0],
    )


def test_ongoing_episode_bootstraps_from_root_value():
    _assert_batch(
        _small(ONGOING),
        ONGOING,
        actions=[0, 1, 2],
        value=[
            9.5,  # r0 + γ r1 + γ² root_value[2] = 1 + 0.5·2 + 0.25·30 = 1 + 1 + 7.5
            13.5,  # r1 + γ r2 + γ² root_value[3] = 2 + 0.5·3 + 0.25·40 = 2 + 1.5 + 10
            17.5,  # r2 + γ r3 + γ² root_value[4] = 3 + 0.5·4 + 0.25·50 = 3 + 2 + 12.5
            21.5,  # r3 + γ r4 + γ² root_value[5] = 4 + 0.5·5 + 0.25·60 = 4 + 2.5 + 15
        ],
        reward=[0.0, 1.0, 2.0, 3.0],  # [not trained, r0, r1, r2]
        policy=POLICY[:4],
        mask=[1.0, 1.0, 1.0, 1.0],
    )


def test_two_player_signs_follow_the_player_to_move():
    # players [0, 1, 1, 0, 1, 0, 0]: σ(k, j) = +1 where player[j] == player[k].
    _assert_batch(
        _small(TWO_PLAYER),
        TWO_PLAYER,
        actions=[0, 1, 2],
        value=[
            -7.5,  # p0: r0 - γ r1 - γ² root_value[2] (p1) = 1 - 0.5·2 - 0.25·30 = 1 - 1 - 7.5
            -6.5,  # p1: r1 + γ r2 (p1) - γ² root_value[3] (p0) = 2 + 1.5 - 10
            13.5,  # p1: r2 - γ r3 (p0) + γ² root_value[4] (p1) = 3 - 2 + 12.5
            16.5,  # p0: r3 - γ r4 (p1) + γ² root_value[5] (p0) = 4 - 2.5 + 15
        ],
        reward=[0.0, 1.0, 2.0, 3.0],  # each from the perspective of the player who acted
        policy=POLICY[:4],
        mask=[1.0, 1.0, 1.0, 1.0],
    )
    # players [0, 1, ...], truncated at row 1: bootstrap_value[1] = 8 is player 1's view.
    _assert_batch(
        _small(TWO_PLAYER_TRUNCATED),
        TWO_PLAYER_TRUNCATED,
        actions=[0, 1, 2],
        value=[
            -2.0,  # p0: r0 - γ r1 - γ² bootstrap_value[1] = 1 - 0.5·2 - 0.25·8 = 1 - 1 - 2
            6.0,  # p1: r1 + γ bootstrap_value[1] = 2 + 0.5·8
            0.0,
            0.0,
        ],
        reward=[0.0, 1.0, 2.0, 0.0],
        policy=[POLICY[0], POLICY[1], ZEROS_3, ZEROS_3],
        mask=[1.0, 1.0, 0.0, 0.0],
    )


def test_tic_tac_toe_win_gives_alternating_monte_carlo_values():
    # X (player 0) moves at rows 0, 2, 4, 6 and wins at row 6: reward +1 to X, γ = 1, n = 9 reaches
    # past the end, so z_k = σ(k, 6)·1 = +1 on X's moves and -1 on O's.
    one_hot = np.eye(9, dtype=np.float32)
    _assert_batch(
        _tic_tac_toe(X_WINS_FROM_START),
        X_WINS_FROM_START,
        actions=[0, 4, 8, 2, 6, 3, 7],
        # moves X  O   X  O   X  O   X, then step 7 absorbing
        value=[1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 0.0],
        # target_reward[k] = r_{k-1}: only X's winning move at row 6 is rewarded, at step 7
        reward=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        policy=np.concatenate([one_hot[[0, 4, 8, 2, 6, 3, 7]], np.zeros((1, 9))]),
        mask=[1.0] * 8,
    )
    # The same game sampled at O's first move: rows 0..5 are moves 2..7, X wins at row 5.
    _assert_batch(
        _tic_tac_toe(X_WINS_FROM_O_MOVE),
        X_WINS_FROM_O_MOVE,
        actions=[4, 8, 2, 6, 3, 7, 0],  # the 7th is the next game's first move: any is fine here
        # moves  O    X    O    X    O    X, then steps 6, 7 absorbing
        value=[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 0.0, 0.0],
        reward=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0],  # r5 = +1 at step 6 = e+1; then 0
        policy=np.concatenate([one_hot[[4, 8, 2, 6, 3, 7]], np.zeros((2, 9))]),
        mask=[1.0] * 8,
    )


def test_tic_tac_toe_draw_gives_zero_targets():
    # Moves 3..9 of the draw at rows 0..6, terminated at row 6 with reward 0. The next game's rewards
    # of 1 (rows 7..) and root values of 0.3 must not leak in: z_0 sums rows 0..8 but stops at row 6.
    one_hot = np.eye(9, dtype=np.float32)
    _assert_batch(
        _tic_tac_toe(DRAW_FROM_THIRD_MOVE),
        DRAW_FROM_THIRD_MOVE,
        actions=[8, 2, 6, 3, 5, 7, 1],
        value=[0.0] * 8,
        reward=[0.0] * 8,  # target_reward[7] = r6 = 0, the drawn final move
        policy=np.concatenate([one_hot[[8, 2, 6, 3, 5, 7, 1]], np.zeros((1, 9))]),
        mask=[1.0] * 8,
    )


@pytest.mark.parametrize(
    ("make", "windows"),
    [(_small, SMALL_WINDOWS), (_tic_tac_toe, TIC_TAC_TOE_WINDOWS)],
    ids=["small", "tic_tac_toe"],
)
def test_jit_and_vmap_match_unjitted(make, windows):
    # One compile of jit(vmap(...)) per configuration covers both transformations.
    unjitted = [make(window) for window in windows]
    stacked = jax.tree.map(lambda *rows: jnp.stack(rows), *windows)
    batched = jax.jit(jax.vmap(make))(stacked)
    assert batched.target_policy.shape[0] == len(windows)
    for i, expected in enumerate(unjitted):
        got = jax.tree.map(lambda x, i=i: x[i], batched)
        for name, want, have in zip(Batch._fields, expected, got, strict=True):
            if want is None:  # next_observation, not asked for
                assert have is None, name
                continue
            np.testing.assert_allclose(have, want, rtol=1e-6, err_msg=name)


def test_invalid_arguments_raise_value_error():
    short = jax.tree.map(lambda x: x[:5], ONGOING)  # K + n + 1 = 6 rows are needed
    with pytest.raises(ValueError, match=r"W = 5 .* W >= num_unroll_steps \+ td_steps \+ 1 = 6"):
        _small(short)
    with pytest.raises(ValueError, match="num_unroll_steps must be >= 1; got 0"):
        make_targets(ONGOING, num_unroll_steps=0, td_steps=N, discount=GAMMA)
    with pytest.raises(ValueError, match="td_steps must be >= 1; got 0"):
        window_length(num_unroll_steps=K, td_steps=0)
    with pytest.raises(ValueError, match=r"discount must be in \[0, 1\]; got 1.5"):
        make_targets(ONGOING, num_unroll_steps=K, td_steps=N, discount=1.5)
    batch_of_windows = jax.tree.map(lambda *rows: jnp.stack(rows), ONGOING, ONGOING)
    with pytest.raises(ValueError, match=r"window.reward must have shape \[W\].*vmap"):
        _small(batch_of_windows)
    ragged = ONGOING._replace(policy=POLICY[:6])
    with pytest.raises(ValueError, match=r"window.policy must have leading axis W = 7"):
        _small(ragged)


# ---------------------------------------------------------------------------------------------------
# reanalyse_values: fresh bootstrap values from the network


def _h_inv_by_hand(y: float, eps: float = 1e-3) -> float:
    """h⁻¹ from the MuZero paper's h(x) = sign(x)(sqrt(|x|+1) - 1) + εx, solved for x by hand."""
    root = (np.sqrt(1 + 4 * eps * (abs(y) + 1 + eps)) - 1) / (2 * eps)
    return float(np.sign(y) * (root**2 - 1))


def _bin_network(support_size: int):
    """A network whose value for observation [t, -t] is h⁻¹(t): its logits pick bin t of [-S, S]."""
    from mz_jax.types import ModelOutput, MuZeroNetwork

    def initial_inference(params, observation):
        bins = jnp.arange(-support_size, support_size + 1, dtype=jnp.float32)
        picked = (bins[None, :] == observation[:, :1]).astype(jnp.float32)
        logits = params["w"] * (60.0 * picked - 30.0)
        batch = observation.shape[0]
        output = ModelOutput(
            value_logits=logits,
            reward_logits=jnp.zeros_like(logits),
            policy_logits=jnp.zeros((batch, 3)),
        )
        return output, jnp.zeros((batch, 1))

    return MuZeroNetwork(initial_inference=initial_inference, recurrent_inference=None)


def test_refresh_values_replaces_every_row_and_passes_no_gradient():
    from mz_jax.training.reanalyse import refresh_values

    stored = np.full(W, 100.0, np.float32)  # a value no network row gives
    windows = jax.tree.map(
        lambda x: jnp.stack([x, x]), _window(reward=[1.0] * W, root_value=stored)
    )
    network, params = _bin_network(support_size=8), {"w": jnp.float32(1.0)}

    refresh = jax.jit(functools.partial(refresh_values, network=network))
    fresh = refresh(params, windows)
    # Row t's observation is [t, -t]; the network's value there is h⁻¹(t). Without rows, every row
    # is refreshed.
    expected = [_h_inv_by_hand(t) for t in range(W)]
    np.testing.assert_allclose(fresh.root_value[0], expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fresh.root_value[1], expected, rtol=1e-4, atol=1e-6)
    for name in ("observation", "reward", "policy", "terminated", "bootstrap_value"):
        np.testing.assert_array_equal(getattr(fresh, name), getattr(windows, name))

    # Targets bootstrap from them: z_0 = r_0 + γ r_1 + γ² v(row 2) = 1 + 0.5 + 0.25 h⁻¹(2).
    batch = jax.vmap(lambda w: make_targets(w, num_unroll_steps=K, td_steps=N, discount=GAMMA))(
        fresh
    )
    assert float(batch.target_value[0, 0]) == pytest.approx(
        1.5 + 0.25 * _h_inv_by_hand(2), rel=1e-5
    )

    # No gradient reaches the parameters through a target.
    def total(p):
        return jnp.sum(refresh(p, windows).root_value)

    # (At w = 0.05 the softmax is far from one-hot, so the values do depend on w.)
    soft = {"w": jnp.float32(0.05)}
    assert float(jax.jit(jax.grad(total))(soft)["w"]) == 0.0
    assert float(total(soft)) != pytest.approx(float(total(params)))


def test_a_window_past_the_newest_step_bootstraps_from_the_newest_row():
    # K = 3, n = 2, γ = 0.5, W = 7; only rows 0..4 are written (w = 5), rows 5 and 6 are garbage.
    # Rewards 1, 2, 3, 4, 5; root values 10, 20, 30, 40, 50 at rows 0..4.
    #   z_0 = 1 + 0.5*2 + 0.25*30 = 9.5           (rows 0, 1; bootstrap row 2: all written)
    #   z_1 = 2 + 0.5*3 + 0.25*40 = 13.5          (rows 1, 2; bootstrap row 3)
    #   z_2 = 3 + 0.5*4 + 0.25*50 = 17.5          (rows 2, 3; bootstrap row 4, the newest)
    #   z_3 = 4 + 0.5*50 = 29.0                   (row 3; row 4 is the newest: stop, bootstrap there)
    # With every row written, z_3 would be 4 + 0.5*5 + 0.25*root_value[5].
    window = _window(
        reward=[1.0, 2.0, 3.0, 4.0, 5.0, NAN, NAN],
        root_value=[10.0, 20.0, 30.0, 40.0, 50.0, NAN, NAN],
        terminated_at=6,  # a garbage flag past the newest row must not matter either
    )
    batch = make_targets(
        window, num_unroll_steps=K, td_steps=N, discount=GAMMA, written_rows=jnp.int32(5)
    )
    np.testing.assert_allclose(batch.target_value, [9.5, 13.5, 17.5, 29.0])
    # The unrolled steps 0..3 are all written: every one is trained, rewards of rows 0..2 included.
    np.testing.assert_allclose(batch.mask, [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(batch.target_reward, [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(batch.observation_mask, [1.0, 1.0, 1.0])


def test_a_window_with_every_row_written_is_unchanged_by_written_rows():
    window = _window(reward=[1.0] * W, root_value=[float(v) for v in range(W)])
    plain = _small(window)
    full = make_targets(
        window, num_unroll_steps=K, td_steps=N, discount=GAMMA, written_rows=jnp.int32(W)
    )
    # Row W - 1 is the newest but no return reaches it (the last reads row K + n = 5 = W - 2).
    for got, want in zip(jax.tree.leaves(full), jax.tree.leaves(plain), strict=True):
        np.testing.assert_array_equal(got, want)
