"""Tests of the prioritized sequence replay against numpy references written here.

Data convention of these tests: the observation of stream e at global time step s is ``[s, e]``, so a
window read back tells exactly which steps of which stream it holds.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mz_jax.training import replay
from mz_jax.types import Trajectory

NUM_ACTIONS = 3
LENGTH, NUM_ENVS, WINDOW, WRITTEN = 8, 2, 3, 11
# Hand-derived: 11 steps into a ring of 8 keep steps 3..10, and a window of 3 must end by step 10,
# so the valid starts are steps 3..8, in slots 3, 4, 5, 6, 7, 0 (slots 1 and 2 hold steps 9 and 10).
VALID_SLOTS = np.array([0, 3, 4, 5, 6, 7])
PRIORITY = np.array(
    [
        [0.5, 2.0],
        [9.0, 9.0],
        [9.0, 9.0],
        [1.0, 0.25],
        [3.0, 1.5],
        [0.75, 4.0],
        [2.5, 0.1],
        [1.2, 6.0],
    ],
    np.float32,
)  # slots 1 and 2 are invalid starts with a large priority, which must not be sampled


def _example() -> Trajectory:
    """One transition without leading axes."""
    return Trajectory(
        observation=np.zeros((2,), np.int32),
        action=np.zeros((), np.int32),
        reward=np.zeros((), np.float32),
        terminated=np.zeros((), bool),
        truncated=np.zeros((), bool),
        policy=np.zeros((NUM_ACTIONS,), np.float32),
        root_value=np.zeros((), np.float32),
        player=np.zeros((), np.int32),
        legal_action_mask=np.zeros((NUM_ACTIONS,), bool),
        bootstrap_value=np.zeros((), np.float32),
        exploratory=np.zeros((), bool),
        final_observation=np.zeros((), np.float32),
        final_player=np.zeros((), np.int32),
    )


def _rollout(start: int, steps: int, num_envs: int) -> Trajectory:
    """Global time steps ``start, ..., start + steps - 1`` of every stream, leading axes [T, E]."""
    time = np.arange(start, start + steps, dtype=np.int32)[:, None] * np.ones(
        (1, num_envs), np.int32
    )
    env = np.ones((steps, 1), np.int32) * np.arange(num_envs, dtype=np.int32)[None, :]
    shape = (steps, num_envs)
    return Trajectory(
        observation=np.stack([time, env], axis=-1),
        action=(time % NUM_ACTIONS).astype(np.int32),
        reward=time.astype(np.float32) / 10,
        terminated=(time % 5 == 4),
        truncated=np.zeros(shape, bool),
        policy=np.full((*shape, NUM_ACTIONS), 1 / NUM_ACTIONS, np.float32),
        root_value=env.astype(np.float32),
        player=np.zeros(shape, np.int32),
        legal_action_mask=np.ones((*shape, NUM_ACTIONS), bool),
        bootstrap_value=np.zeros(shape, np.float32),
        exploratory=np.zeros(shape, bool),
        final_observation=np.zeros(shape, np.float32),
        final_player=np.zeros(shape, np.int32),
    )


def _filled(capacity: int, num_envs: int, chunks: list[int]) -> tuple[replay.ReplayState, int]:
    """A replay after adding rollouts of the given lengths, and the number of steps written."""
    state = replay.init(_example(), capacity=capacity, num_envs=num_envs)
    written = 0
    for steps in chunks:
        state = _jit_add(state, _rollout(written, steps, num_envs))
        written += steps
    return state, written


_jit_add = jax.jit(replay.add)


@functools.partial(jax.jit, static_argnames=("batch_size", "window_length"))
def _jit_sample(state, key, alpha, beta, *, batch_size, window_length):
    return replay.sample(
        state, key, batch_size=batch_size, window_length=window_length, alpha=alpha, beta=beta
    )


def _reference_valid_starts(written: int, length: int, window_length: int) -> np.ndarray:
    """Global time steps that start a window of written steps still held by a ring of ``length``."""
    oldest = max(0, written - length)
    return np.arange(oldest, written - window_length + 1)


# ----------------------------------------------------------------------------------- add / ring


def test_add_keeps_latest_steps_in_ring_slots():
    length, num_envs = LENGTH, NUM_ENVS
    reference = np.full((length, num_envs), -1)  # global time held by each slot; -1 = unwritten
    state = replay.init(_example(), capacity=length * num_envs + 1, num_envs=num_envs)
    assert state.priority.shape == (length, num_envs)  # capacity rounded down to a multiple of E
    written = 0
    for steps, jitted in [(3, True), (4, False), (1, True), (4, True), (3, True), (4, True)]:
        add = _jit_add if jitted else replay.add
        state = add(state, _rollout(written, steps, num_envs))
        for s in range(written, written + steps):
            reference[s % length] = s
        written += steps
        held = reference >= 0
        np.testing.assert_array_equal(state.data.observation[..., 0][held], reference[held])
        np.testing.assert_array_equal(
            state.data.observation[..., 1][held],
            np.broadcast_to(np.arange(num_envs), held.shape)[held],
        )
        np.testing.assert_array_equal(state.data.action[held], (reference % NUM_ACTIONS)[held])
        assert not np.any(np.asarray(state.data.observation)[~held])
        assert int(state.write_index) == written % length
        assert int(state.num_written) == min(written, length)
    assert written > length  # the ring wrapped
    assert state.data.reward.dtype == jnp.float32 and state.data.terminated.dtype == jnp.bool_


def test_new_data_enters_with_max_priority():
    state, _ = _filled(LENGTH * NUM_ENVS, NUM_ENVS, chunks=[1, 1])
    index = replay.ReplayIndex(time=jnp.array([0, 1]), env=jnp.array([1, 0]))
    state = replay.update_priorities(state, index, jnp.array([0.5, 7.0]))
    assert float(state.max_priority) == pytest.approx(7.0 + 1e-6)
    state = _jit_add(state, _rollout(2, 1, NUM_ENVS))
    np.testing.assert_allclose(state.priority[2], [7.0 + 1e-6] * 2)
    np.testing.assert_allclose(state.priority[:2], [[1.0, 0.5 + 1e-6], [7.0 + 1e-6, 1.0]])


# ----------------------------------------------------------------------------------- valid windows


@settings(max_examples=20, deadline=None)
@given(
    chunks=st.lists(st.sampled_from([1, 3, 4]), min_size=0, max_size=7),
    window_length=st.sampled_from([3, 8]),
    priority_seed=st.integers(0, 2**16),
)
def test_sampled_windows_are_written_contiguous_steps(chunks, window_length, priority_seed):
    length, num_envs, batch_size = LENGTH, NUM_ENVS, 64
    state, written = _filled(capacity=length * num_envs, num_envs=num_envs, chunks=chunks)
    # Arbitrary priorities everywhere, including at invalid starts, which must stay unsampled.
    rng = np.random.default_rng(priority_seed)
    state = state._replace(
        priority=jnp.asarray(rng.uniform(0.01, 5.0, (length, num_envs)), jnp.float32)
    )
    expected_starts = _reference_valid_starts(written, length, window_length)

    assert bool(replay.can_sample(state, window_length=window_length)) == (len(expected_starts) > 0)
    valid = np.asarray(replay.valid_starts(state, window_length=window_length))
    np.testing.assert_array_equal(valid[:, 0], np.isin(np.arange(length), expected_starts % length))
    if len(expected_starts) == 0:
        return

    windows, index, weights = _jit_sample(
        state,
        jax.random.key(priority_seed),
        1.0,
        1.0,
        batch_size=batch_size,
        window_length=window_length,
    )
    time, env = np.asarray(windows.observation[..., 0]), np.asarray(windows.observation[..., 1])
    assert time.shape == (batch_size, window_length)
    np.testing.assert_array_equal(np.diff(time, axis=1), 1)  # consecutive global steps
    assert np.all(
        np.isin(time[:, 0], expected_starts)
    )  # written, not overwritten, not past the head
    np.testing.assert_array_equal(env, np.broadcast_to(np.asarray(index.env)[:, None], env.shape))
    np.testing.assert_array_equal(np.asarray(index.time), time[:, 0] % length)
    np.testing.assert_array_equal(windows.action, time % NUM_ACTIONS)
    assert np.all((weights > 0) & (weights <= 1))


@settings(max_examples=20, deadline=None)
@given(
    chunks=st.lists(st.sampled_from([1, 3, 4]), min_size=0, max_size=7),
    written_rows=st.sampled_from([1, 3, 5]),
)
def test_windows_past_the_newest_step_start_where_their_first_rows_are_written(
    chunks, written_rows
):
    # Windows of 8 steps of which only the first written_rows must be written: the valid starts
    # are those of 8-step windows of written data shortened to written_rows steps, and each
    # sampled window reports how many of its rows (from the start) are written, counted here from
    # the global time steps the rows hold.
    length, num_envs, window_length = LENGTH, NUM_ENVS, 8
    state, written = _filled(capacity=length * num_envs, num_envs=num_envs, chunks=chunks)
    expected_starts = _reference_valid_starts(written, length, written_rows)
    assert bool(
        replay.can_sample(state, window_length=window_length, written_rows=written_rows)
    ) == (len(expected_starts) > 0)
    valid = np.asarray(
        replay.valid_starts(state, window_length=window_length, written_rows=written_rows)
    )
    np.testing.assert_array_equal(valid[:, 0], np.isin(np.arange(length), expected_starts % length))
    if len(expected_starts) == 0:
        return
    windows, index, _ = replay.sample(
        state,
        jax.random.key(len(chunks)),
        batch_size=32,
        window_length=window_length,
        written_rows=written_rows,
    )
    time = np.asarray(windows.observation[..., 0])
    assert np.all(np.isin(time[:, 0], expected_starts))
    # Row r of a window is written data exactly when its start + r is a step written so far.
    expected_written = np.minimum(written - time[:, 0], window_length)
    np.testing.assert_array_equal(
        replay.written_rows_of(state, index, window_length=window_length), expected_written
    )
    assert np.all(expected_written >= written_rows)


def test_written_rows_out_of_range_is_refused():
    state, _ = _filled(LENGTH * NUM_ENVS, NUM_ENVS, chunks=[3])
    for bad in (0, 9):
        with pytest.raises(ValueError, match="written_rows"):
            replay.valid_starts(state, window_length=8, written_rows=bad)


def test_empty_buffer_cannot_sample_and_gives_zero_weights():
    state = replay.init(_example(), capacity=LENGTH * NUM_ENVS, num_envs=NUM_ENVS)
    assert not bool(replay.can_sample(state, window_length=1))
    _, _, weights = _jit_sample(state, jax.random.key(0), 1.0, 1.0, batch_size=64, window_length=3)
    np.testing.assert_array_equal(weights, 0.0)
    state, _ = _filled(LENGTH * NUM_ENVS, NUM_ENVS, chunks=[3])
    assert bool(replay.can_sample(state, window_length=3))
    assert not bool(replay.can_sample(state, window_length=4))


# ----------------------------------------------------------------------------------- priorities


def _prioritized_state() -> replay.ReplayState:
    state, written = _filled(LENGTH * NUM_ENVS, NUM_ENVS, [4, 4, 3])
    assert written == WRITTEN
    np.testing.assert_array_equal(
        np.sort(_reference_valid_starts(written, LENGTH, WINDOW) % LENGTH), VALID_SLOTS
    )
    time, env = np.meshgrid(np.arange(LENGTH), np.arange(NUM_ENVS), indexing="ij")
    index = replay.ReplayIndex(time=jnp.asarray(time.ravel()), env=jnp.asarray(env.ravel()))
    # update_priorities stores |p| + 1e-6; subtract it so the stored values are PRIORITY.
    return replay.update_priorities(state, index, jnp.asarray(PRIORITY.ravel() - 1e-6))


def _expected_probabilities(priority: np.ndarray, alpha: float) -> np.ndarray:
    mass = np.zeros_like(priority, dtype=np.float64)
    mass[VALID_SLOTS] = priority[VALID_SLOTS].astype(np.float64) ** alpha
    return mass / mass.sum()


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.0])
def test_sampling_frequencies_follow_priority_to_the_alpha(alpha):
    state = _prioritized_state()
    num_samples = 20_000
    _, index, _ = _jit_sample(
        state, jax.random.key(1), alpha, 1.0, batch_size=num_samples, window_length=WINDOW
    )
    counts = np.zeros((LENGTH, NUM_ENVS))
    np.add.at(counts, (np.asarray(index.time), np.asarray(index.env)), 1)
    expected = _expected_probabilities(PRIORITY, alpha)
    if alpha == 0.0:
        np.testing.assert_allclose(expected[VALID_SLOTS], 1 / (len(VALID_SLOTS) * NUM_ENVS))
    assert counts[expected == 0].sum() == 0  # invalid starts never drawn
    observed, expected_counts = counts[expected > 0], expected[expected > 0] * num_samples
    p_value = stats.chisquare(observed, expected_counts).pvalue
    assert p_value > 1e-3, (observed, expected_counts)
    np.testing.assert_allclose(
        replay.probabilities(state, window_length=WINDOW, alpha=alpha), expected, rtol=1e-5
    )


def test_sampling_frequencies_when_slots_are_not_a_square_number():
    # 7 × 3 = 21 starts: the two-level sampler pads them to 5 blocks of 5.
    state, _ = _filled(capacity=21, num_envs=3, chunks=[7])
    priority = np.arange(1, 22, dtype=np.float32).reshape(7, 3)
    state = state._replace(priority=jnp.asarray(priority))
    num_samples = 20_000
    _, index, _ = _jit_sample(
        state, jax.random.key(6), 1.0, 1.0, batch_size=num_samples, window_length=1
    )
    counts = np.zeros((7, 3))
    np.add.at(counts, (np.asarray(index.time), np.asarray(index.env)), 1)
    expected_counts = priority / priority.sum() * num_samples
    assert stats.chisquare(counts.ravel(), expected_counts.ravel()).pvalue > 1e-3


def test_importance_weights_match_formula():
    state = _prioritized_state()
    alpha, beta = 0.7, 0.4
    _, index, weights = _jit_sample(
        state, jax.random.key(2), alpha, beta, batch_size=64, window_length=WINDOW
    )
    probability = _expected_probabilities(PRIORITY, alpha)
    num_valid = len(VALID_SLOTS) * NUM_ENVS
    valid = probability > 0
    all_weights = np.zeros_like(probability)
    all_weights[valid] = (num_valid * probability[valid]) ** -beta
    drawn = all_weights[np.asarray(index.time), np.asarray(index.env)]
    expected = drawn / drawn.max()  # normalised by the largest weight in the batch
    np.testing.assert_allclose(weights, expected, rtol=1e-5)
    # The smallest priority drawn has weight exactly 1.
    assert np.max(weights) == 1


def test_sample_is_the_same_jitted_and_not():
    state = _prioritized_state()
    key = jax.random.key(3)
    eager = replay.sample(state, key, batch_size=64, window_length=WINDOW, alpha=0.6, beta=0.5)
    jitted = _jit_sample(state, key, 0.6, 0.5, batch_size=64, window_length=WINDOW)
    jax.tree.map(np.testing.assert_allclose, eager, jitted)


def test_update_priorities_moves_sampling_mass_and_max_priority():
    state, _ = _filled(LENGTH * NUM_ENVS, NUM_ENVS, [4, 4, 3])
    _, index, _ = _jit_sample(
        state, jax.random.key(4), 1.0, 1.0, batch_size=20_000, window_length=WINDOW
    )
    before = np.mean((np.asarray(index.time) == 4) & (np.asarray(index.env) == 0))
    assert before == pytest.approx(1 / 12, abs=0.01)  # all priorities equal: uniform over 12 starts

    # Slot (4, 0) gets priority 100 and (5, 1) gets 0; everything else keeps 1.
    target = replay.ReplayIndex(time=jnp.array([4, 5]), env=jnp.array([0, 1]))
    state = jax.jit(replay.update_priorities)(state, target, jnp.array([100.0, 0.0]))
    assert float(state.max_priority) == pytest.approx(100.0 + 1e-6)
    assert float(state.priority[5, 1]) == pytest.approx(1e-6)  # made positive, not starved
    _, index, _ = _jit_sample(
        state, jax.random.key(5), 1.0, 1.0, batch_size=20_000, window_length=WINDOW
    )
    after = np.mean((np.asarray(index.time) == 4) & (np.asarray(index.env) == 0))
    assert after == pytest.approx(100 / 110, abs=0.01)  # 100 / (100 + 10 · 1 + 1e-6)

    # Negative priorities count by magnitude; a NaN one falls back to max_priority.
    state = replay.update_priorities(state, target, jnp.array([-3.0, jnp.nan]))
    np.testing.assert_allclose(state.priority[4, 0], 3.0 + 1e-6)
    np.testing.assert_allclose(state.priority[5, 1], 100.0 + 1e-6)
    assert float(state.max_priority) == pytest.approx(100.0 + 1e-6)


# ----------------------------------------------------------------------------------- misc


def test_bytes_per_transition_by_hand():
    # observation 2 × int32 = 8, action 4, reward 4, terminated 1, truncated 1, policy 3 × 4 = 12,
    # root_value 4, player 4, legal_action_mask 3 × 1 = 3, bootstrap_value 4, exploratory 1,
    # final_observation 4 (a placeholder), final_player 4; plus a float32 priority.
    expected = 8 + 4 + 4 + 1 + 1 + 12 + 4 + 4 + 3 + 4 + 1 + 4 + 4 + 4
    assert replay.bytes_per_transition(_example()) == expected
    shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), _example())
    assert replay.bytes_per_transition(shapes) == expected


def test_uint8_observations_hold_eight_bit_images_exactly_and_clip_the_rest():
    """Stored as uint8, an observation ``k * float32(1 / 255)`` reads back as the same float32; values outside
    [0, 1] read back clipped, and one between two levels at the nearest (half to even)."""
    num_envs, steps = 2, 4
    example = _example()._replace(observation=jax.ShapeDtypeStruct((130,), jnp.uint8))
    state = replay.init(example, capacity=steps * num_envs, num_envs=num_envs)
    pixels = np.float32(np.arange(0, 256, 2)) * np.float32(1 / 255)  # 128 levels, as a frame's
    observation = np.concatenate([pixels, np.float32([-0.25, 1.5])])
    rollout = _rollout(0, steps, num_envs)
    rollout = rollout._replace(observation=np.broadcast_to(observation, (steps, num_envs, 130)))
    state = _jit_add(state, rollout)
    assert state.data.observation.dtype == jnp.uint8
    np.testing.assert_array_equal(state.data.observation[0, 0, :3], [0, 2, 4])
    windows, _, _ = _jit_sample(state, jax.random.key(0), 1.0, 1.0, batch_size=3, window_length=2)
    assert windows.observation.dtype == jnp.float32
    np.testing.assert_array_equal(
        windows.observation[..., :128], np.broadcast_to(pixels, (3, 2, 128))
    )
    np.testing.assert_array_equal(
        windows.observation[..., 128:], np.broadcast_to([0.0, 1.0], (3, 2, 2))
    )
    between = replay.encode(jnp.float32([127.5 / 255, 0.3]), jnp.uint8)
    np.testing.assert_array_equal(between, [128, 76])  # 76.5 -> 76 (even); 127.5 -> 128 (even)
    # A quarter of float32's bytes for the observation: 130 instead of 520.
    assert replay.bytes_per_transition(example) == replay.bytes_per_transition(_example()) - 8 + 130


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match=r"capacity .* got 3"):
        replay.init(_example(), capacity=3, num_envs=4)
    state = replay.init(_example(), capacity=8, num_envs=2)  # L = 4
    with pytest.raises(ValueError, match=r"window_length .* L=4.* got 5"):
        replay.sample(state, jax.random.key(0), batch_size=2, window_length=5)
    with pytest.raises(ValueError, match=r"window_length .* got 5"):
        replay.can_sample(state, window_length=5)
    with pytest.raises(ValueError, match=r"window_length .* got 0"):
        replay.sample(state, jax.random.key(0), batch_size=2, window_length=0)
    with pytest.raises(ValueError, match=r"batch_size .* got 0"):
        replay.sample(state, jax.random.key(0), batch_size=0, window_length=1)
    with pytest.raises(ValueError, match=r"alpha .* got -1"):
        replay.sample(state, jax.random.key(0), batch_size=2, window_length=1, alpha=-1.0)
    with pytest.raises(ValueError, match=r"rollout .* L=4 .* got T=5"):
        replay.add(state, _rollout(0, 5, 2))
    with pytest.raises(ValueError, match=r"rollout.observation .* got \(2, 3, 2\)"):
        replay.add(state, _rollout(0, 2, 3))


def test_one_replay_per_device_under_shard_map():
    """Each device holds the streams of its own environments; the scalars stay replicated."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    num_devices, envs_per_device, length = 2, 2, 4
    mesh = jax.make_mesh((num_devices,), ("data",), devices=jax.devices()[:num_devices])
    state = replay.init(
        _example(),
        capacity=length * envs_per_device * num_devices,
        num_envs=envs_per_device * num_devices,
    )
    spec = replay.ReplayState(
        data=jax.tree.map(lambda _: P(None, "data"), state.data),
        priority=P(None, "data"),
        write_index=P(),
        num_written=P(),
        max_priority=P(),
    )

    @jax.jit
    @functools.partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(spec, jax.tree.map(lambda _: P(None, "data"), state.data), P()),
        out_specs=(spec, P("data"), P("data")),
    )
    def step(state, rollout, key):
        state = replay.add(state, rollout)
        key = jax.random.fold_in(key, jax.lax.axis_index("data"))
        windows, index, _ = replay.sample(state, key, batch_size=8, window_length=2)
        priorities = windows.reward[:, 0] + 10 * jax.lax.axis_index("data")
        state = replay.update_priorities(state, index, priorities, axis_name="data")
        return state, windows.observation, index.env

    state = jax.device_put(state, jax.tree.map(lambda s: NamedSharding(mesh, s), spec))
    rollout = jax.device_put(
        _rollout(0, 3, envs_per_device * num_devices), NamedSharding(mesh, P(None, "data"))
    )
    state, observation, local_env = step(state, rollout, jax.random.key(0))
    observation, local_env = np.asarray(observation), np.asarray(local_env)
    # Device d samples only its own environments 2d, 2d + 1 and reports local stream indices.
    device = np.repeat(np.arange(num_devices), 8)
    np.testing.assert_array_equal(observation[:, 0, 1], local_env + envs_per_device * device)
    assert int(state.write_index) == 3 and int(state.num_written) == 3
    # The largest priority is on device 1 (10 + reward, reward = step / 10) and shared by all.
    expected_max = 10 + observation[device == 1, 0, 0].max() / 10 + 1e-6
    assert float(state.max_priority) == pytest.approx(expected_max, abs=1e-5)
