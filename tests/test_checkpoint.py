"""Checkpoints: round trip, integrity hash, interrupted saves, retention, finiteness, donation safety.

Small hand-made states (no network, nothing compiled): a dict of parameters, a typed PRNG key and a
counter, like the pieces of a RunState. The whole RunState goes through the same code in
tests/test_run.py.
"""

import json
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.config import overrides as overrides_lib
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run import workdir as workdir_lib
from mz_jax.run.checkpoint import Checkpointer, CheckpointError


class State(NamedTuple):
    params: dict
    key: jax.Array
    step: jax.Array


def _noise(seed: int, size: int = 4096) -> np.ndarray:
    # Random bits do not compress, so the array's bytes appear verbatim in orbax's data file.
    return np.random.default_rng(seed).integers(0, 2**32, size=size, dtype=np.uint32)


def _state(seed: int) -> State:
    return State(
        params={
            "w": jnp.asarray(np.random.default_rng(seed).standard_normal((8, 4)), jnp.float32),
            "noise": jnp.asarray(_noise(seed)),
        },
        key=jax.random.key(seed),
        step=jnp.int32(seed),
    )


def _abstract(state: State) -> State:
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), state)


def _assert_same(a: State, b: State) -> None:
    a, b = checkpoint_lib.to_saveable(a), checkpoint_lib.to_saveable(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _steps(workdir) -> list[int]:
    checkpointer = Checkpointer(workdir)
    steps = checkpointer.steps()
    checkpointer.close()
    return steps


def _restore_latest(workdir, like: State):
    checkpointer = Checkpointer(workdir)
    restored = checkpointer.restore_latest(_abstract(like))
    checkpointer.close()
    return restored


# orbax's event loop complains on stderr after a failed read; the failure itself is what we test.
_ignore_orbax_loop_noise = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning"
)


def _save_steps(workdir, steps, **options) -> None:
    checkpointer = Checkpointer(workdir, **options)
    for step in steps:
        assert checkpointer.save(step, _state(step), meta={"note": f"step {step}"})
    checkpointer.close()


def test_round_trip_restores_keys_counters_and_meta(tmp_path):
    _save_steps(tmp_path, [1, 2])
    checkpointer = Checkpointer(tmp_path)
    step, state, meta = checkpointer.restore_latest(_abstract(_state(0)))
    checkpointer.close()
    assert step == 2
    _assert_same(state, _state(2))
    assert jax.dtypes.issubdtype(state.key.dtype, jax.dtypes.prng_key)
    # The restored key draws what the original draws.
    assert jax.random.uniform(state.key) == jax.random.uniform(jax.random.key(2))
    assert meta["note"] == "step 2"
    assert len(meta["sha256"]) == 64


def test_empty_workdir_restores_nothing(tmp_path):
    checkpointer = Checkpointer(tmp_path)
    assert checkpointer.restore_latest(_abstract(_state(0))) is None
    checkpointer.close()


def test_state_may_be_donated_as_soon_as_save_returns(tmp_path):
    state = _state(5)
    expected = jax.device_get(checkpoint_lib.to_saveable(state))
    checkpointer = Checkpointer(tmp_path)
    checkpointer.save(5, state)
    # Free the saved buffers at once, as donating them to the next training step does (the CPU
    # backend ignores donation, so delete them explicitly): a save still reading them would fail.
    for leaf in jax.tree.leaves(state):
        leaf.delete()
    checkpointer.close()
    restored = _restore_latest(tmp_path, state)
    np.testing.assert_array_equal(np.asarray(restored[1].params["w"]), expected.params["w"])
    np.testing.assert_array_equal(np.asarray(restored[1].params["noise"]), expected.params["noise"])


def _flip_bit_of(array: np.ndarray, checkpoint_dir) -> None:
    """Flips one bit inside the stored bytes of ``array`` (found verbatim in a data file)."""
    needle = array[1000:1016].tobytes()
    for path in sorted(p for p in checkpoint_dir.rglob("*") if p.is_file()):
        data = bytearray(path.read_bytes())
        at = data.find(needle)
        if at >= 0:
            data[at + 5] ^= 0x10
            path.write_bytes(bytes(data))
            return
    raise AssertionError(f"the array's bytes were not found under {checkpoint_dir}")


@_ignore_orbax_loop_noise
def test_silently_corrupted_checkpoint_is_reported_and_the_previous_one_used(tmp_path, capsys):
    _save_steps(tmp_path, [1, 2, 3])
    _flip_bit_of(_noise(3), tmp_path / "checkpoints" / "3")

    checkpointer = Checkpointer(tmp_path)
    step, state, _ = checkpointer.restore_latest(_abstract(_state(0)))
    assert step == 2
    _assert_same(state, _state(2))
    err = capsys.readouterr().err
    assert "checkpoint 3" in err and "content hash does not match" in err
    # Moved out of the way (kept for inspection), so the run can save step 3 again.
    assert checkpointer.steps() == [1, 2]
    (moved,) = (tmp_path / "corrupted_checkpoints").iterdir()
    assert moved.name.startswith("3-")
    assert checkpointer.save(3, _state(3))
    checkpointer.close()
    step, state, _ = _restore_latest(tmp_path, _state(0))
    assert step == 3
    _assert_same(state, _state(3))


@_ignore_orbax_loop_noise
def test_unreadable_checkpoint_falls_back_too(tmp_path, capsys):
    _save_steps(tmp_path, [1, 2])
    for path in (tmp_path / "checkpoints" / "2" / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.write_bytes(b"garbage")
    checkpointer = Checkpointer(tmp_path)
    step, _, _ = checkpointer.restore_latest(_abstract(_state(0)))
    checkpointer.close()
    assert step == 1
    assert "checkpoint 2" in capsys.readouterr().err


@_ignore_orbax_loop_noise
def test_hash_mismatch_of_a_single_restore_raises(tmp_path):
    _save_steps(tmp_path, [4])
    _flip_bit_of(_noise(4), tmp_path / "checkpoints" / "4")
    checkpointer = Checkpointer(tmp_path)
    with pytest.raises(CheckpointError, match=r"checkpoint 4 .* corrupted"):
        checkpointer.restore(4, _abstract(_state(0)))
    checkpointer.close()


@_ignore_orbax_loop_noise
def test_state_of_another_shape_is_refused_and_nothing_is_moved(tmp_path):
    _save_steps(tmp_path, [1, 2])
    other = _state(0)._replace(params={"w": jnp.zeros((3, 3)), "noise": jnp.zeros(5, jnp.uint32)})
    checkpointer = Checkpointer(tmp_path)
    with pytest.raises(CheckpointError, match=r"all 2 checkpoints .* cannot be restored") as error:
        checkpointer.restore_latest(_abstract(other))
    assert "params.noise is uint32[4096] there, uint32[5] in this run's state" in str(error.value)
    assert not error.value.corrupt
    assert checkpointer.steps() == [1, 2]
    checkpointer.close()
    assert not (tmp_path / "corrupted_checkpoints").exists()


def test_interrupted_save_is_ignored_and_removed_at_start_up(tmp_path):
    _save_steps(tmp_path, [1])
    # What a kill during orbax's write leaves: a temporary directory that was never renamed.
    leftover = tmp_path / "checkpoints" / "2.orbax-checkpoint-tmp-1234"
    (leftover / "state").mkdir(parents=True)
    (leftover / "state" / "_METADATA").write_text("{")
    checkpointer = Checkpointer(tmp_path)
    assert not leftover.exists()
    assert checkpointer.steps() == [1]
    step, state, _ = checkpointer.restore_latest(_abstract(_state(0)))
    checkpointer.close()
    assert step == 1
    _assert_same(state, _state(1))


def test_retention_keeps_the_newest_and_every_multiple(tmp_path):
    _save_steps(tmp_path, range(1, 11), keep_last=2, keep_every=4)
    assert _steps(tmp_path) == [4, 8, 9, 10]


def test_retention_without_keep_every(tmp_path):
    _save_steps(tmp_path, range(1, 6), keep_last=3)
    assert _steps(tmp_path) == [3, 4, 5]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_state_is_never_written(tmp_path, capsys, bad):
    state = _state(1)
    state = state._replace(params={**state.params, "w": state.params["w"].at[2, 3].set(bad)})
    checkpointer = Checkpointer(tmp_path)
    assert checkpointer.save(1, state) is False
    checkpointer.close()
    assert _steps(tmp_path) == []
    assert ".params['w']" in capsys.readouterr().err


def test_saving_an_existing_step_keeps_the_first(tmp_path):
    checkpointer = Checkpointer(tmp_path)
    assert checkpointer.save(1, _state(1))
    assert checkpointer.save(1, _state(7))
    checkpointer.close()
    _, state, _ = _restore_latest(tmp_path, _state(0))
    _assert_same(state, _state(1))


@_ignore_orbax_loop_noise
def test_read_only_checkpointer_neither_removes_nor_moves_nor_saves(tmp_path):
    _save_steps(tmp_path, [1, 2])
    _flip_bit_of(_noise(2), tmp_path / "checkpoints" / "2")
    leftover = tmp_path / "checkpoints" / "3.orbax-checkpoint-tmp-99"
    leftover.mkdir()
    reader = Checkpointer(tmp_path, read_only=True)
    step, _, _ = reader.restore_latest(_abstract(_state(0)))
    assert step == 1
    assert leftover.exists()
    assert (tmp_path / "checkpoints" / "2").exists()
    with pytest.raises(ValueError, match="read_only"):
        reader.save(5, _state(5))
    reader.close()


def test_digest_covers_every_leaf():
    base = checkpoint_lib.state_digest(_state(1))
    assert base == checkpoint_lib.state_digest(_state(1))
    changed_key = _state(1)._replace(key=jax.random.key(2))
    changed_step = _state(1)._replace(step=jnp.int32(2))
    changed_dtype = _state(1)._replace(step=jnp.uint32(1))
    for other in (changed_key, changed_step, changed_dtype):
        assert checkpoint_lib.state_digest(other) != base


def test_config_differences_lists_nested_fields():
    saved = {"discount": 0.997, "network": {"latent_size": 64, "kind": "mlp"}, "seed": 0}
    now = {"discount": 0.99, "network": {"latent_size": 32, "kind": "mlp"}, "seed": 0}
    assert overrides_lib.config_differences(saved, now) == [
        "discount: 0.997 -> 0.99",
        "network.latent_size: 64 -> 32",
    ]


def test_write_atomically_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "config.json"
    workdir_lib.write_atomically(path, json.dumps({"a": 1}))
    workdir_lib.write_atomically(path, json.dumps({"a": 2}))
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]


class StateWithOption(NamedTuple):
    """State, grown by an optional field that is None unless an option is on (as the actor state
    grew by the εz-greedy carry)."""

    params: dict
    key: jax.Array
    step: jax.Array
    option: jax.Array | None = None


def test_a_state_grown_by_an_optional_field_restores_older_checkpoints(tmp_path):
    _save_steps(tmp_path, [3])  # written by a State, which has no 'option'
    old = _state(3)
    grown = StateWithOption(old.params, old.key, old.step)
    checkpointer = Checkpointer(tmp_path)
    step, state, _ = checkpointer.restore_latest(_abstract(grown))
    assert step == 3 and type(state) is StateWithOption and state.option is None
    np.testing.assert_array_equal(np.asarray(state.params["w"]), np.asarray(old.params["w"]))
    assert int(state.step) == 3
    assert jax.random.uniform(state.key) == jax.random.uniform(jax.random.key(3))
    # With the option on, the field is saved and restored like any other array.
    with_option = grown._replace(option=jnp.arange(5, dtype=jnp.int32), step=jnp.int32(4))
    checkpointer.save(4, with_option)
    checkpointer.wait()
    step, state, _ = checkpointer.restore_latest(_abstract(with_option))
    checkpointer.close()
    assert step == 4
    np.testing.assert_array_equal(np.asarray(state.option), np.arange(5))
