"""Crash-safe training: kill it at any moment, start it again, and it carries on exactly.

Compiles are the cost here, so there are two: the subprocesses of the kill test share one through
JAX's persistent compilation cache, and the in-process tests share one trainer (the tests differ only
in host-side settings, and inject their faults into the run state between iterations).
"""

import dataclasses
import errno
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _crash_worker
from _tensorboard import event_files, steps_by_tag, steps_in_metrics, tensorboard_view

from mz_jax.config import overrides as overrides_lib
from mz_jax.config.overrides import override
from mz_jax.config.train import TrainConfig
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run import loop as run
from mz_jax.run import records as records_lib
from mz_jax.run import resume as resume_lib
from mz_jax.run import workdir as workdir_lib
from mz_jax.run.logger import MetricsLogger
from mz_jax.run.records import read_metrics
from mz_jax.training import evaluate as evaluate_lib
from mz_jax.training.train import make_train

WORKER = Path(__file__).parent / "_crash_worker.py"
# Of every run in this file: the kill test's processes and the in-process runs train one program,
# so whichever comes first leaves it in the session's compilation cache for the others.
ITERATIONS = 12
# The replay can sample a window of K + td + 1 = 4 steps once each stream holds 4: after two
# rollouts of 2 steps, so every iteration from the second on makes one update.
FIRST_UPDATE_ITERATION = math.ceil(4 / _crash_worker.ROLLOUT_LENGTH)


# ---------------------------------------------------------------------------------------------------
# Kill -9 at random moments (and inside a save), resume, and end bit-identical to an uninterrupted run


def _start(workdir: Path, log: Path, cache: Path, *extra: str) -> subprocess.Popen:
    """Starts the worker, with the session's compilation cache (tests/conftest.py) if it has one,
    else ``cache``."""
    session_cache = os.environ.get("MZ_JAX_COMPILATION_CACHE", "off")
    if session_cache.lower() != "off":
        cache = Path(session_cache)
    command = [sys.executable, str(WORKER), str(workdir), str(ITERATIONS), "--cache", str(cache)]
    with open(log, "w") as out:
        return subprocess.Popen([*command, *extra], stdout=out, stderr=subprocess.STDOUT)


def _finish(process: subprocess.Popen, log: Path, *, expect_returncode: int) -> str:
    process.wait(timeout=400)
    text = log.read_text()
    assert process.returncode == expect_returncode, f"exit {process.returncode}:\n{text[-3000:]}"
    return text


def _wait_for(log: Path, text: str, process: subprocess.Popen, count: int = 1) -> bool:
    """True once ``text`` appears ``count`` times in ``log``; False if the worker exits first."""
    deadline = time.monotonic() + 400
    while log.read_text().count(text) < count:
        if process.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"no {text!r} after 400s"
        time.sleep(0.01)
    return True


def _read_checkpoint(workdir: Path, step: int) -> tuple[list, dict]:
    """The raw leaves (numpy, in tree order) and meta of one checkpoint, read without our code."""
    manager = ocp.CheckpointManager(
        workdir / "checkpoints", options=ocp.CheckpointManagerOptions(read_only=True)
    )
    restored = manager.restore(
        step,
        args=ocp.args.Composite(state=ocp.args.StandardRestore(), meta=ocp.args.JsonRestore()),
    )
    manager.close()
    leaves = jax.tree_util.tree_leaves_with_path(restored.state)
    return [(jax.tree_util.keystr(p), np.asarray(x)) for p, x in leaves], dict(restored.meta)


def test_killed_run_resumes_bit_identically(tmp_path):
    cache = tmp_path / "compilation-cache"
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"

    process = _start(reference, tmp_path / "reference.log", cache)
    _finish(process, tmp_path / "reference.log", expect_returncode=0)

    # 1. Killed inside the save of checkpoint 5: every file written, the commit (rename) not done.
    log = tmp_path / "crash-0.log"
    text = _finish(_start(crashed, log, cache, "--kill-at-commit", "5"), log, expect_returncode=-9)
    assert "killing myself before committing checkpoint 5" in text
    leftovers = [p.name for p in (crashed / "checkpoints").iterdir() if "tmp" in p.name]
    assert leftovers and all(name.startswith("5.") for name in leftovers), leftovers

    # 2. Killed after random delays: between saves or inside one, wherever they fall. Each worker
    # reports every iteration (and saves after it); the delay is drawn in units of the time it took
    # for one, so the kill lands within the next few iterations on a fast or a slow machine.
    # Drawn from a fixed seed, named with the outcomes in a failure's message; KILL_SEED=N draws
    # other delays.
    kill_seed = int(os.environ.get("KILL_SEED", "0"))
    rng = random.Random(kill_seed)
    outcomes = []
    for attempt in (1, 2):
        log = tmp_path / f"crash-{attempt}.log"
        process = _start(crashed, log, cache)
        delay = None
        if _wait_for(log, "env steps", process):  # compiled, restored, one iteration done
            started = time.monotonic()
            if _wait_for(log, "env steps", process, count=2):
                delay = rng.uniform(0.0, 2.0) * (time.monotonic() - started)
                time.sleep(delay)
                process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        text = log.read_text()
        # The first resumes from the last committed checkpoint before the interrupted one.
        assert (
            "resumed from checkpoint 4 (" if attempt == 1 else "resumed from checkpoint"
        ) in text
        left = sorted(p.name for p in (crashed / "checkpoints").iterdir())
        outcomes.append(f"delay {delay}s, exit {process.returncode}, left {left}")
    print(f"random kills (KILL_SEED={kill_seed}):", outcomes)

    # 3. Run to the end.
    log = tmp_path / "final.log"
    text = _finish(_start(crashed, log, cache), log, expect_returncode=0)
    assert "resumed from checkpoint" in text
    assert f"finished at iteration {ITERATIONS}" in text
    assert not [p for p in (crashed / "checkpoints").iterdir() if "tmp" in p.name]

    expected, expected_meta = _read_checkpoint(reference, ITERATIONS)
    actual, actual_meta = _read_checkpoint(crashed, ITERATIONS)
    assert [path for path, _ in actual] == [path for path, _ in expected]
    differing = [
        path
        for (path, x), (_, y) in zip(actual, expected, strict=True)
        if x.dtype != y.dtype or not np.array_equal(x, y)
    ]
    assert not differing, f"differ after kills (KILL_SEED={kill_seed}: {outcomes}): {differing}"
    # The whole state was compared: parameters, optimiser state, replay, actors, keys, counters.
    paths = " ".join(path for path, _ in actual)
    for part in ("params", "opt_state", "replay", "priority", "actor", "key", "iteration"):
        assert part in paths
    assert actual_meta["sha256"] == expected_meta["sha256"]
    assert actual_meta["updates"] == ITERATIONS - FIRST_UPDATE_ITERATION + 1
    assert actual_meta["config"] == overrides_lib.config_to_dict(
        _crash_worker.tiny_config(ITERATIONS)
    )
    # The metrics tell the same story: one record per iteration, the redone ones not repeated.
    without_time = lambda records: [{k: v for k, v in r.items() if k != "wall_s"} for r in records]
    assert without_time(read_metrics(crashed)) == without_time(read_metrics(reference))
    assert len(read_metrics(reference)) == ITERATIONS
    # And so does TensorBoard, each tag once per step, as it would after the kills (#90).
    assert steps_by_tag(crashed / "tensorboard") == steps_in_metrics(read_metrics(crashed))
    assert steps_by_tag(crashed / "tensorboard") == steps_by_tag(reference / "tensorboard")


# ---------------------------------------------------------------------------------------------------
# In-process runs on one shared compiled trainer, with faults injected between iterations


@pytest.fixture(scope="session")  # (not "module": xdist may interleave other modules' tests)
def shared_trainer():
    """One compiled trainer for the in-process runs (they differ only in host-side settings)."""
    return make_train(_crash_worker.tiny_config(ITERATIONS))


def _host_side_config(**changes) -> TrainConfig:
    return _crash_worker.tiny_config(ITERATIONS).replace(**changes)


@pytest.fixture
def use_trainer(monkeypatch, shared_trainer):
    """``use_trainer(before_step=None)``: makes run_training use the shared trainer, calling
    ``before_step(iteration, state) -> state`` ahead of each step (iteration counted from 1)."""

    def install(before_step=None):
        def step(state):
            if before_step is not None:
                state = before_step(int(state.iteration) + 1, state)
            return shared_trainer.step(state)

        trainer = dataclasses.replace(shared_trainer, step=step)

        def fake_make_train(config, **kwargs):
            program = ("checkpoint", "keep", "log", "max_consecutive", "eval")
            for field in dataclasses.fields(config):
                if not field.name.startswith(program):
                    assert getattr(config, field.name) == getattr(trainer.config, field.name)
            return trainer

        monkeypatch.setattr(run, "make_train", fake_make_train)

    return install


def _set_all(tree, value):
    """Every float leaf of ``tree`` set to ``value``, keeping each leaf's sharding."""

    def set_leaf(x):
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return x
        return jax.device_put(jnp.full(x.shape, value, x.dtype), x.sharding)

    return jax.tree.map(set_leaf, tree)


def _checkpoints(workdir: Path) -> list[int]:
    checkpointer = checkpoint_lib.Checkpointer(workdir)
    steps = checkpointer.steps()
    checkpointer.close()
    return steps


def _restore(workdir: Path, trainer):
    checkpointer = checkpoint_lib.Checkpointer(workdir)
    restored = checkpointer.restore_latest(trainer.abstract_state)
    checkpointer.close()
    return restored


def test_sigterm_saves_and_stops_then_the_same_call_carries_on(tmp_path, use_trainer, capsys):
    def terminate_at_3(iteration, state):
        if iteration == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return state

    # Saves after the first iteration (a new run), on the signal and at the end.
    config = _host_side_config(checkpoint_every_seconds=1e9)
    use_trainer(terminate_at_3)
    handler = signal.getsignal(signal.SIGTERM)
    summary = run.run_training(config, tmp_path)
    assert summary["stopped_by_signal"]
    assert summary["iterations"] == 3  # the iteration under way is finished, then saved
    assert summary["signal"] == signal.SIGTERM and summary["checkpoint"] == 3
    assert _checkpoints(tmp_path) == [1, 3]
    assert signal.getsignal(signal.SIGTERM) is handler
    out = capsys.readouterr().out
    acknowledged = out.index(run._StopSignals.ACKNOWLEDGEMENT)
    assert acknowledged < out.index("signal 15 received: saving and stopping")

    use_trainer()
    summary = run.run_training(config, tmp_path)
    assert not summary["stopped_by_signal"]
    assert summary["iterations"] == ITERATIONS
    assert "resumed from checkpoint 3 " in capsys.readouterr().out
    assert _checkpoints(tmp_path) == [3, ITERATIONS]
    records = read_metrics(tmp_path)
    assert [r["env_steps"] // 8 for r in records] == list(range(1, ITERATIONS + 1))


def test_every_multiple_of_keep_checkpoint_every_is_saved_and_kept(tmp_path, use_trainer):
    # Saved by time only at the end; orbax's keep_period keeps multiples, so they must be saved.
    config = _host_side_config(
        checkpoint_every_seconds=1e9, keep_checkpoints=1, keep_checkpoint_every=3
    )
    use_trainer()
    run.run_training(config, tmp_path)
    assert _checkpoints(tmp_path) == [3, 6, 9, 12]


@pytest.mark.parametrize("completed", [(True, False, False, True), (True, True, True, True)])
def test_evaluation_episodes_that_outlast_eval_max_steps_are_logged_and_noted_once(
    tmp_path, monkeypatch, shared_trainer, capsys, completed
):
    # An evaluation whose middle two episodes had not ended (a board game cut before its end).
    result = evaluate_lib.EvalResult(
        episode_return=jnp.array([1.0, 0.0, 0.0, 3.0]),
        episode_length=jnp.array([5, 9, 9, 7]),
        completed=jnp.array(completed),
    )
    trainer = dataclasses.replace(shared_trainer, evaluate=lambda params, key: result)
    monkeypatch.setattr(run, "make_train", lambda config, **kwargs: trainer)
    # 8 env steps an iteration: evaluations at 32, 64 and 96 (the last iteration).
    run.run_training(_host_side_config(eval_every_env_steps=32), tmp_path)
    evals = [r for r in read_metrics(tmp_path) if "eval/episode_return" in r]
    assert [r["env_steps"] for r in evals] == [32, 64, 96]
    assert all(r["eval/episode_return"] == 1.0 for r in evals)  # (1 + 0 + 0 + 3) / 4
    share = sum(completed) / 4
    assert all(r["eval/completed"] == share for r in evals)
    out = capsys.readouterr().out
    expected = "note: 2 of 4 evaluation episodes had not ended after eval_max_steps=1000"
    assert out.count(expected) == (1 if share < 1 else 0)
    assert out.count("evaluation episodes had not ended") == out.count(expected)


def test_second_signal_stops_at_once(tmp_path, use_trainer):
    def terminate_twice(iteration, state):
        if iteration == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
        return state

    use_trainer(terminate_twice)
    with pytest.raises(KeyboardInterrupt, match="twice"):
        run.run_training(_host_side_config(checkpoint_every_seconds=1e9), tmp_path)
    assert _checkpoints(tmp_path) == [1]  # the first iteration's; nothing saved on the way out


def test_a_signal_is_acknowledged_while_the_main_thread_waits_for_a_computation():
    # Python runs a signal handler only between bytecodes of its main thread; here that thread is
    # inside XLA until the loop ends, as it is inside the compiled step of a run.
    times = {}

    class Stream:
        def write(self, text):
            if text.startswith("stopping: "):
                times["acknowledged"] = time.monotonic()

        def flush(self):
            pass

    @jax.jit
    def spin(n):
        body = lambda i, x: jnp.sin(x) * 1.0000001 + 1e-3
        return jax.lax.fori_loop(0, n, body, jnp.zeros(256))

    spin(10).block_until_ready()  # compiled
    started = time.monotonic()
    spin(100_000).block_until_ready()
    per_iteration = (time.monotonic() - started) / 100_000
    n = int(3.0 / per_iteration)  # about 3 s of computation

    stop = run._StopSignals(stream=Stream())
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        np.asarray(spin(n))
        ended = time.monotonic()
    finally:
        stop.restore()
    assert stop.received == signal.SIGTERM
    assert "acknowledged" in times, "no acknowledgement"
    assert times["acknowledged"] < ended, (times["acknowledged"] - started, ended - started)


def test_nonfinite_updates_are_skipped_counted_and_stop_the_run(
    tmp_path, use_trainer, shared_trainer, capsys
):
    poison_at = 4  # from this iteration on, the replay holds NaN observations and rewards

    def poison_replay(iteration, state):
        if iteration == poison_at:
            data = state.replay.data
            data = data._replace(
                observation=_set_all(data.observation, jnp.nan),
                reward=_set_all(data.reward, jnp.nan),
            )
            state = state._replace(replay=state.replay._replace(data=data))
        return state

    use_trainer(poison_replay)
    config = _host_side_config(max_consecutive_nonfinite=2, checkpoint_every_seconds=0.0)
    with pytest.raises(run.NonFiniteError) as error:
        run.run_training(config, tmp_path)
    # Updates run from iteration 2, one per iteration; those of iterations 4 and 5 see NaN.
    last_update = poison_at + 1 - FIRST_UPDATE_ITERATION + 1
    message = str(error.value)
    assert "2 updates in a row" in message
    assert f"the last at update {last_update};" in message
    assert (
        "non-finite terms: loss/policy, loss/reward, loss/total, loss/value, optim/grad_norm"
        in message
    )

    records = read_metrics(tmp_path)
    assert [r["optim/nonfinite_total"] for r in records] == [0, 0, 0, 1, 2]
    assert [r["optim/nonfinite_in_a_row"] for r in records] == [0, 0, 0, 1, 2]
    assert records[-1]["loss/total"] == "nan"
    # Nothing non-finite was saved: the replay was poisoned before iteration 4's save.
    assert "not saving checkpoint 4: non-finite values in .replay.data.observation" in (
        capsys.readouterr().err
    )
    assert _checkpoints(tmp_path) == [2, 3]
    step, state, _ = _restore(tmp_path, shared_trainer)
    assert step == 3
    assert not checkpoint_lib.nonfinite_leaves(state)


def test_nonfinite_environment_stops_the_run_naming_it(tmp_path, use_trainer):
    def blow_up_physics(iteration, state):
        if iteration == 3:  # CartPole's state becomes NaN, so its observations do
            actor = state.actor
            env_state = actor.env_state._replace(backend=_set_all(actor.env_state.backend, np.nan))
            state = state._replace(actor=actor._replace(env_state=env_state))
        return state

    use_trainer(blow_up_physics)
    with pytest.raises(run.NonFiniteError) as error:
        run.run_training(_host_side_config(checkpoint_every_seconds=0.0), tmp_path)
    message = str(error.value)
    assert "the environment gymnax:CartPole-v1 returned a non-finite observation" in message
    assert f"({_crash_worker.NUM_ENVS * _crash_worker.ROLLOUT_LENGTH} steps)" in message
    assert "before env step 24" in message
    assert _checkpoints(tmp_path) == [1, 2]
    assert read_metrics(tmp_path)[-1]["actor/nonfinite_env_steps"] == 8


# ---------------------------------------------------------------------------------------------------
# Start-up checks: nothing compiled, nothing written where it should not be


def test_resuming_forgets_the_metrics_of_iterations_it_redoes(tmp_path):
    lines = [json.dumps({"step": i, "env_steps": 8 * i, "loss": 1.0 / i}) for i in range(1, 6)]
    torn = '{"step": 6, "env_steps": 48, "lo'  # a kill in mid-write
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n" + torn)
    records_lib.forget_metrics_after(tmp_path, env_steps=24)  # resumed from iteration 3
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3]
    records_lib.forget_metrics_after(tmp_path, env_steps=0)  # started afresh
    assert read_metrics(tmp_path) == []


def test_a_resumed_run_leaves_tensorboard_showing_each_tag_once_per_step(tmp_path):
    # Four iterations logged, then a kill; the restart resumes the checkpoint of iteration 2.
    first = MetricsLogger(tmp_path)
    for i in (1, 2, 3, 4):
        first.write(step=i, env_steps=8 * i, wall_s=i, **{"loss/total": float(i)})
    first.close()
    records_lib.forget_metrics_after(tmp_path, env_steps=16)
    resumed = MetricsLogger(tmp_path, start_env_steps=16)
    for i in (3, 4, 5):
        resumed.write(step=i, env_steps=8 * i, wall_s=i, **{"loss/total": 10.0 * i})
    resumed.close()

    # Two events files, the second not overwriting the first (both within the same second).
    assert len(event_files(tmp_path / "tensorboard")) == 2
    assert tensorboard_view(tmp_path / "tensorboard") == {
        "loss/total": [(8, 1.0), (16, 2.0), (24, 30.0), (32, 40.0), (40, 50.0)]
    }
    assert steps_by_tag(tmp_path / "tensorboard") == steps_in_metrics(read_metrics(tmp_path))


def test_each_seed_of_a_multi_seed_run_is_a_tensorboard_run_of_its_own(tmp_path):
    logger = MetricsLogger(tmp_path)
    for env_steps in (8, 16):
        for seed in (3, 4):
            logger.write(step=1, env_steps=env_steps, wall_s=1.0, seed=seed, loss=float(seed))
    logger.close()
    assert [r["seed"] for r in read_metrics(tmp_path)] == [3, 4, 3, 4]
    for seed in (3, 4):
        view = tensorboard_view(tmp_path / "tensorboard" / f"seed_{seed}")
        assert view == {"loss": [(8, float(seed)), (16, float(seed))]}  # no "seed" tag
    assert not event_files(tmp_path / "tensorboard")


def test_changed_config_is_refused_listing_the_fields(tmp_path):
    saved = TrainConfig()
    resume_lib.check_config(tmp_path, saved, allow_config_change=False)
    changed = saved.replace(discount=0.9, batch_size=64)
    with pytest.raises(ValueError) as error:
        resume_lib.check_config(tmp_path, changed, allow_config_change=False)
    message = str(error.value)
    assert "--allow-config-change" in message
    assert "batch_size: 128 -> 64" in message
    assert "discount: 0.99 -> 0.9" in message
    assert "seed" not in message
    # Refused means untouched.
    assert json.loads((tmp_path / "config.json").read_text())["discount"] == 0.99

    resume_lib.check_config(tmp_path, saved, allow_config_change=False)  # the same config resumes
    resume_lib.check_config(tmp_path, changed, allow_config_change=True)
    assert json.loads((tmp_path / "config.json").read_text())["discount"] == 0.9


def test_config_saved_before_a_field_existed_resumes_with_its_default(tmp_path):
    # A run saved by an older version lacks the fields added since; they ran as their defaults do.
    saved = TrainConfig().replace(discount=0.95)
    resume_lib.check_config(tmp_path, saved, allow_config_change=False)
    old = json.loads((tmp_path / "config.json").read_text())
    del old["search"]["policy_target"], old["consistency_loss_weight"]
    (tmp_path / "config.json").write_text(json.dumps(old))
    assert resume_lib.check_config(tmp_path, saved, allow_config_change=False) == []
    # A missing field resumed with another value than its default is still a change.
    (tmp_path / "config.json").write_text(json.dumps(old))
    with pytest.raises(ValueError, match=r"consistency_loss_weight: 0\.0 -> 2\.0"):
        resume_lib.check_config(
            tmp_path, saved.replace(consistency_loss_weight=2.0), allow_config_change=False
        )


def test_chance_only_weights_change_nothing_a_deterministic_run_computes(tmp_path):
    # commitment_loss_weight's default changed (0.25 -> 0) after runs were saved with it; a
    # deterministic network's loss never reads it, so such a run resumes and is reported again.
    old = override(
        TrainConfig(),
        {"stochastic.commitment_loss_weight": 0.25, "stochastic.code_usage_weight": 1.0},
    )
    resume_lib.check_config(tmp_path, old, allow_config_change=False)
    assert resume_lib.check_config(tmp_path, TrainConfig(), allow_config_change=False) == [
        "stochastic.code_usage_weight: 1.0 -> 0.0",
        "stochastic.commitment_loss_weight: 0.25 -> 0.0",
    ]
    resume_lib.check_config(tmp_path, old, allow_config_change=False)
    resume_lib.check_finished_run(tmp_path, TrainConfig(), name="run")
    # A field that matters is still refused beside them.
    with pytest.raises(ValueError, match=r"another configuration.*discount: 0\.99 -> 0\.9") as e:
        resume_lib.check_finished_run(tmp_path, TrainConfig(discount=0.9), name="run")
    assert "commitment_loss_weight" not in str(e.value)


def test_the_learner_unroll_changes_no_result_so_runs_resume_and_are_reported_across_it(tmp_path):
    looped = TrainConfig(unroll_learner=False)
    resume_lib.check_config(tmp_path, looped, allow_config_change=False)
    assert resume_lib.check_config(tmp_path, TrainConfig(), allow_config_change=False) == [
        "unroll_learner: False -> None"
    ]
    resume_lib.check_finished_run(tmp_path, looped.replace(unroll_learner=True), name="run")


def test_chance_only_weights_matter_to_a_stochastic_run(tmp_path):
    stochastic = TrainConfig().replace(
        network=dataclasses.replace(TrainConfig().network, num_chance_outcomes=4)
    )
    resume_lib.check_config(tmp_path, stochastic, allow_config_change=False)
    changed = override(stochastic, {"stochastic.commitment_loss_weight": 0.25})
    with pytest.raises(ValueError, match=r"stochastic\.commitment_loss_weight: 0\.0 -> 0\.25"):
        resume_lib.check_config(tmp_path, changed, allow_config_change=False)
    with pytest.raises(ValueError, match=r"stochastic\.commitment_loss_weight: 0\.0 -> 0\.25"):
        resume_lib.check_finished_run(tmp_path, changed, name="run")


def test_unreadable_config_file_is_reported(tmp_path):
    (tmp_path / "config.json").write_text('{"discount": 0.9')  # cut short by hand
    with pytest.raises(ValueError, match=r"config\.json cannot be read"):
        resume_lib.check_config(tmp_path, TrainConfig(), allow_config_change=False)


def test_unwritable_workdir_is_reported_at_start(tmp_path, monkeypatch):
    workdir = tmp_path / "run"

    def refuse(self, *args, **kwargs):  # (root may write anywhere: the refusal is made here)
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(OSError, match=f"workdir '{workdir}' is not writable: .*Permission denied"):
        run.run_training(_host_side_config(), workdir)


def test_a_workdir_in_a_file_is_bad_input_not_an_io_failure(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for workdir in (blocker, blocker / "run"):
        with pytest.raises(ValueError, match=f"workdir '{workdir}' is not a directory"):
            run.run_training(_host_side_config(), workdir)
    assert blocker.read_text() == ""


def test_full_workdir_is_reported_at_start(tmp_path, monkeypatch):
    usage = workdir_lib.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(workdir_lib.shutil, "disk_usage", lambda path: usage._replace(free=1000))
    with pytest.raises(OSError, match=r"has 0\.0 MiB free; a checkpoint of this run needs up to"):
        workdir_lib.check_workdir(tmp_path, required_bytes=10**6)
    workdir_lib.check_workdir(tmp_path, required_bytes=1000)


def test_unknown_environment_is_reported_before_compiling_or_writing(tmp_path):
    # The run's programs, by the names XLA compiles them under (building a trainer compiles nothing).
    trainer = make_train(_host_side_config())
    programs = {f"jit({f.__name__})" for f in (trainer.step, trainer.init, trainer.evaluate)}
    compiled = []  # every program XLA compiles meanwhile (JAX reports each compile's duration)

    def on_duration(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(kwargs.get("fun_name", "?"))

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        with pytest.raises(ValueError, match="'gymnax:CartPole-v1'") as error:
            run.run_training(_host_side_config(env="gymnax:CartPol-v1"), tmp_path)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    assert "Unknown environment name 'gymnax:CartPol-v1'" in str(error.value)
    # (Importing the environment libraries compiles a few single operations, such as jit(iota).)
    assert not programs & set(compiled), compiled
    assert not (tmp_path / "config.json").exists()
    assert not (tmp_path / "checkpoints").exists()


def test_batch_not_divisible_by_devices_is_reported_before_compiling(tmp_path):
    assert len(jax.devices()) == 4  # tests/conftest.py
    with pytest.raises(ValueError, match="'batch_size' = 6 is invalid: allowed a multiple of the"):
        run.run_training(_host_side_config(batch_size=6), tmp_path)
    assert not (tmp_path / "config.json").exists()


@pytest.mark.parametrize(
    "env, kind, overrides",
    [
        ("gymnax:CartPole-v1", "mlp", {}),
        ("gymnax:Breakout-MinAtar", "resnet", {"channels": 4, "num_blocks": 1}),
    ],
)
def test_the_header_names_the_network_and_warns_of_a_resnet_on_a_cpu(
    tmp_path, capsys, env, kind, overrides
):
    from mz_jax.config.train import NetworkConfig
    from mz_jax.run.start import print_header

    network = dataclasses.replace(NetworkConfig(hidden_sizes=(8,), latent_size=8), **overrides)
    config = TrainConfig(env=env, num_envs=2, batch_size=2, network=network)
    trainer = make_train(config, devices=jax.devices()[:1])
    print_header(config, trainer)  # from the abstract state: before anything is compiled
    out = capsys.readouterr().out
    params = trainer.components.init_params(jax.random.key(0))
    assert f"| network {kind} {sum(x.size for x in jax.tree.leaves(params)):,} parameters" in out
    on_cpu = jax.default_backend() == "cpu"
    assert ("a ResNet is slow on a CPU" in out) == (kind == "resnet" and on_cpu)
