"""Every failure a user can cause or meet ends in one clear line and the right exit status (#16).

The CLI cases run ``mz-jax`` as a child process and send it signals, on one tiny Catch run
(:func:`_run_lifecycle`) whose four processes share their compiled programs through JAX's
persistent compilation cache: killed with SIGKILL after its second iteration, finished, extended
and stopped by SIGTERM, then stopped by a full disk (an orbax writer patched to fail as a full disk
does). The CLI cases that fail before anything is compiled call ``main`` in-process. The library
cases (loss inputs, ``scale_gradient``, ``Agent.act``, checkpoints, presets, the metrics
logger) run in-process on hand-made inputs and compile next to nothing.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _tensorboard import steps_by_tag, steps_in_metrics

import mz_jax
from mz_jax import Batch, ModelOutput, MuZeroNetwork, make_loss_fn, scale_gradient
from mz_jax.cli.main import main
from mz_jax.config.presets import PresetError, load_preset
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run import loop as run_lib
from mz_jax.run import metrics as metrics_lib
from mz_jax.run.agent import Agent
from mz_jax.run.logger import MetricsLogger, MetricsWriteError
from mz_jax.run.records import read_metrics
from mz_jax.run.resume import check_config
from mz_jax.training.train import make_train

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_IO_ERROR, EXIT_STOPPED, EXIT_BROKEN_PIPE = 1, 2, 74, 75, 141
ITERATION = 4 * 2  # env steps of one iteration: num_envs x rollout_length below

# The `catch` preset down to what compiles fastest; checkpoint_every_seconds keeps its 120 s.
TINY = [
    "--config", "catch",
    "--num-envs", "4",
    "--rollout-length", "2",
    "--batch-size", "4",
    "--updates-per-iteration", "1",
    "--num-unroll-steps", "1",
    "--td-steps", "1",
    "--replay-capacity", "64",
    "--eval-every-env-steps", "0",
    "--log-every-seconds", "0",
    "--search.num-simulations", "1",
    "--search.max-num-considered-actions", "2",
    "--network.hidden-sizes", "8",
    "--network.latent-size", "8",
]  # fmt: skip

# Makes orbax's second save of the process fail where a full disk made it fail in #16: in the
# background commit of the checkpoint's directory, after its items were written.
FULL_DISK_AT_SECOND_SAVE = textwrap.dedent(
    """
    import errno, sys
    from orbax.checkpoint._src.path import atomicity
    commit = atomicity.AtomicRenameTemporaryPath.finalize
    saves = []
    async def finalize(self, *args, **kwargs):
        if self.get_final().name.isdigit():  # a step's directory (not one of its items)
            saves.append(self.get_final().name)
            if len(saves) == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        return await commit(self, *args, **kwargs)
    atomicity.AtomicRenameTemporaryPath.finalize = finalize
    from mz_jax.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _environment(cache: Path) -> dict:
    environment = dict(os.environ)
    environment.pop("XLA_FLAGS", None)  # one device: the child compiles less than the test's four
    environment.update(
        JAX_COMPILATION_CACHE_DIR=str(cache),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1",
        PYTHONUNBUFFERED="1",
    )
    return environment


class Child:
    """``mz-jax ARGS`` (or ``python -c CODE ARGS``) in a child process, its stdout and stderr in
    files."""

    def __init__(self, tmp: Path, name: str, args: list[str], *, code: str | None = None):
        self.out, self.err = tmp / f"{name}.out", tmp / f"{name}.err"
        start = ["-c", code] if code else ["-m", "mz_jax.cli.main"]
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.process = subprocess.Popen(
                [sys.executable, *start, *args],
                stdout=out,
                stderr=err,
                env=_environment(tmp / "compilation-cache"),
            )

    def wait_for(self, condition, timeout: float = 240) -> bool:
        """True once ``condition()`` holds; False if the child exits first."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None or time.monotonic() > deadline:
                return condition()
            time.sleep(0.05)
        return True

    def printed(self, text: str) -> bool:
        return text in self.out.read_text()

    def finish(self, timeout: float = 240) -> dict:
        self.process.wait(timeout=timeout)
        return {
            "status": self.process.returncode,
            "out": self.out.read_text(),
            "err": self.err.read_text(),
        }


def _train(workdir: Path, total_env_steps: int) -> list[str]:
    # Checkpoints: the first after the first iteration, then at every even iteration (the default
    # interval of 120 s never comes in these runs).
    return [
        "train",
        *TINY,
        "--workdir",
        str(workdir),
        "--total-env-steps",
        str(total_env_steps),
        "--keep-checkpoint-every",
        "2",
    ]


LONG = 10_000 * ITERATION  # the runs that are stopped never get near it (a length is compiled in)
LONGER = 2 * LONG  # a run extended


def _run_lifecycle(tmp: Path) -> dict:
    """One run through four processes; what each left (status, output, files) by step name.

    The training step is compiled once, by the first process, and loaded from the cache by the
    last two; the second finds its run finished and compiles nothing.
    """
    workdir = tmp / "run"
    steps: dict = {"workdir": workdir}

    # 1. SIGKILL once the checkpoint of the second iteration is there.
    child = Child(tmp, "killed", _train(workdir, LONG))
    child.wait_for(lambda: (workdir / "checkpoints" / "2").is_dir(), timeout=180)
    child.process.send_signal(signal.SIGKILL)
    steps["killed"] = child.finish()
    steps["killed"]["files"] = _files(workdir)

    # 2. The same command with a run of two iterations: its checkpoint has finished it.
    steps["finished"] = Child(tmp, "finished", _train(workdir, 2 * ITERATION)).finish()
    steps["finished"]["files"] = _files(workdir)

    # 3. Extended to a larger length (the finished start wrote nothing, its length included), then
    # stopped by SIGTERM (a preemption) once it trains again.
    child = Child(tmp, "extended", _train(workdir, LONGER))
    child.wait_for(lambda: child.printed(f"/{LONGER:,} ("))
    child.process.send_signal(signal.SIGTERM)
    steps["extended"] = child.finish()

    # 4. The same command again, and the disk is full at its second save.
    args = _train(workdir, LONGER)
    steps["full_disk"] = Child(tmp, "full_disk", args, code=FULL_DISK_AT_SECOND_SAVE).finish()
    steps["metrics"] = read_metrics(workdir)
    return steps


def _files(workdir: Path) -> dict[str, int]:
    """Every file under ``workdir``: its path -> its size."""
    return {
        str(p.relative_to(workdir)): p.stat().st_size for p in workdir.rglob("*") if p.is_file()
    }


def _finished_at(out: str) -> int:
    """The checkpoint named by the one line of a run started again after it finished."""
    match = re.fullmatch(
        r"\S+ holds a finished run: checkpoint (\d+) reached [\d,]+ of total_env_steps=[\d,]+ "
        r"environment steps; nothing to do \(a larger --total-env-steps continues it\)\n",
        out,
    )
    assert match, out
    return int(match[1])


def _resumed_from(out: str) -> int:
    return int(re.search(r"resumed from checkpoint (\d+) ", out)[1])


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _tiny_config(env: str, *, batch_size: int) -> mz_jax.TrainConfig:
    """A configuration that builds and compiles fast."""
    return mz_jax.TrainConfig(
        env=env,
        num_envs=4,
        batch_size=batch_size,
        replay_capacity=64,
        search=mz_jax.SearchConfig(num_simulations=2),
        network=mz_jax.NetworkConfig(hidden_sizes=(8,), latent_size=8),
    )


def test_cli_lifecycle_kill_finish_extend_sigterm_full_disk(tmp_path):
    """The CLI rows of #16 on one run (one test, so that xdist runs its processes once)."""
    steps = _run_lifecycle(tmp_path)
    _check_kill_in_the_first_minutes_loses_nothing_and_leaves_no_empty_file(steps)
    _check_a_larger_total_env_steps_extends_the_run(steps)
    _check_sigterm_saves_and_exits_with_the_resume_status(steps)
    _check_full_disk_is_one_line_with_the_io_status_and_the_state_stays_safe(steps)
    _check_metrics_schema_in_the_docs_covers_every_field_written(steps)
    # After a kill, a finished start, a resume, a SIGTERM and a full disk, TensorBoard shows each
    # tag once per step, the steps metrics.jsonl holds.
    tensorboard = steps["workdir"] / "tensorboard"
    assert steps_by_tag(tensorboard) == steps_in_metrics(steps["metrics"])


def _check_kill_in_the_first_minutes_loses_nothing_and_leaves_no_empty_file(steps):
    killed, finished = steps["killed"], steps["finished"]
    assert killed["status"] == -signal.SIGKILL, killed
    # The first iteration's checkpoint, long before checkpoint_every_seconds (120 s).
    assert "checkpoints/1/commit_success.txt" in killed["files"], sorted(killed["files"])
    # (A save the kill interrupted is a temporary directory, which the next start removes.)
    empty = [
        name
        for name, size in killed["files"].items()
        if size == 0 and ".orbax-checkpoint-tmp" not in name
    ]
    assert not empty, empty
    assert any(name.startswith("tensorboard/events.out.tfevents") for name in killed["files"])
    # The restart finds the run finished by its newest checkpoint (a changed length is accepted,
    # not refused), says so in one line and writes nothing: only a save the kill interrupted (a
    # temporary directory) is removed.
    assert finished["status"] == 0, finished
    assert _finished_at(finished["out"]) >= 2
    assert finished["err"] == ""
    kept = {
        name: size for name, size in killed["files"].items() if ".orbax-checkpoint-tmp" not in name
    }
    assert finished["files"] == kept


def _check_a_larger_total_env_steps_extends_the_run(steps):
    finished, extended = steps["finished"], steps["extended"]
    assert _resumed_from(extended["out"]) == _finished_at(finished["out"]), extended
    assert (
        f"resuming with a changed configuration: total_env_steps: {LONG} -> {LONGER} "
        "(temperature_schedule and the priority_beta and random_action_anneal annealing"
    ) in extended["out"]
    assert f"/{LONGER:,} (" in extended["out"]  # it trained on
    saved = json.loads((steps["workdir"] / "config.json").read_text())
    assert saved["total_env_steps"] == LONGER


def _check_sigterm_saves_and_exits_with_the_resume_status(steps):
    extended = steps["extended"]
    assert extended["status"] == EXIT_STOPPED, extended
    # Acknowledged when it came, then saved at the end of the iteration under way.
    acknowledged = extended["out"].index(run_lib._StopSignals.ACKNOWLEDGEMENT)
    assert acknowledged < extended["out"].index("signal 15 received: saving and stopping")
    (line,) = _error_lines(extended["err"])
    match = re.fullmatch(
        r"mz-jax train: stopped by signal 15 after saving checkpoint (\d+) \(([\d,]+) env steps\) "
        r"in (\S+); run the same command again to resume",
        line,
    )
    assert match, line
    step, env_steps = int(match[1]), int(match[2].replace(",", ""))
    assert step > _resumed_from(extended["out"]) and env_steps == step * ITERATION
    assert (steps["workdir"] / "checkpoints" / str(step)).is_dir()
    # The next start carries on from it.
    assert _resumed_from(steps["full_disk"]["out"]) == step


def _check_full_disk_is_one_line_with_the_io_status_and_the_state_stays_safe(steps):
    full_disk, workdir = steps["full_disk"], steps["workdir"]
    assert full_disk["status"] == EXIT_IO_ERROR, full_disk
    (line,) = _error_lines(full_disk["err"])
    match = re.fullmatch(
        rf"mz-jax train: error: saving checkpoint (\d+) to {re.escape(str(workdir))}/checkpoints "
        r"failed: \[Errno 28\] No space left on device; the newest complete checkpoint, (\d+), is "
        r"intact\. Free space \(or fix the directory\) and run the same command again to resume "
        rf"\(traceback in {re.escape(str(workdir))}/errors\.log\)",
        line,
    )
    assert match, line
    failed, intact = int(match[1]), int(match[2])
    assert _resumed_from(full_disk["out"]) < intact < failed  # its first save is intact
    assert "Traceback" not in full_disk["out"]
    log = (workdir / "errors.log").read_text()
    assert "No space left on device" in log and "Traceback" in log
    # What stays: the intact checkpoint, the newest committed one (the next start resumes there).
    reader = checkpoint_lib.Checkpointer(workdir, read_only=True)
    committed = reader.steps()
    reader.close()
    assert committed[-1] == intact


def _documented_metrics() -> dict[str, str]:
    """Field -> scope, read off the table of mz_jax.run.metrics's docstring: a row names its fields
    in the first column (or, ending in ':', on a line of its own) and its scope in the second."""
    lines = metrics_lib.__doc__.splitlines()
    borders = [i for i, line in enumerate(lines) if line.startswith("=====")]
    lines = lines[borders[1] + 1 : borders[2]]  # the rows, between the header and the end
    documented = {}
    for line, below in zip(lines, [*lines[1:], ""], strict=True):
        if not line.startswith("``"):
            continue
        if line.rstrip().endswith(":"):
            names, scope = re.findall(r"``([^`]+)``", line), below[32:49].strip()
        else:
            names, scope = re.findall(r"``([^`]+)``", line[:32]), line[32:49].strip()
        documented.update(dict.fromkeys(names, scope))
    return documented


def _check_metrics_schema_in_the_docs_covers_every_field_written(steps):
    documented = _documented_metrics()
    scopes = {"cumulative", "run", "last iteration", "log window", "evaluation"}
    assert set(documented.values()) <= scopes, documented
    written = {name for record in steps["metrics"] for name in record}
    assert written, "no metrics"
    assert written <= set(documented), written - set(documented)
    assert documented["step"] == "cumulative" and documented["optim/updates"] == "last iteration"
    assert documented["train/episode_return"] == "log window"


# ---------------------------------------------------------------------------------------------------
# The CLI in-process: inputs that fail before anything is compiled


def _run_cli(argv: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code, capsys.readouterr().err


def test_preset_with_a_syntax_error_is_one_line_naming_file_and_line(tmp_path, capsys):
    path = tmp_path / "mine.py"
    path.write_text("from mz_jax import TrainConfig\n\ndef config(:\n    return TrainConfig()\n")
    with pytest.raises(PresetError, match=rf"{re.escape(str(path))}, line 3: SyntaxError"):
        load_preset(str(path))
    status, err = _run_cli(["train", "--config", str(path)], capsys)
    assert status == EXIT_BAD_INPUT
    (line,) = _error_lines(err)
    assert line.startswith("mz-jax train: error: --config") and f"{path}, line 3" in line

    path.write_text("import no_such_module_here\n")
    status, err = _run_cli(["train", "--config", str(path)], capsys)
    assert status == EXIT_BAD_INPUT
    (line,) = _error_lines(err)
    assert f"{path}, line 1: loading it raised ModuleNotFoundError" in line


def test_unknown_environment_leaves_no_directory_behind(tmp_path, capsys):
    workdir = tmp_path / "runs" / "nope"
    status, err = _run_cli(["train", "--workdir", str(workdir), "--env", "gymnax:Nope-v0"], capsys)
    assert status == EXIT_BAD_INPUT
    assert "gymnax:Nope-v0" in err
    assert not (tmp_path / "runs").exists()


def test_a_start_that_fails_before_its_first_iteration_removes_what_it_created(
    tmp_path, monkeypatch
):
    config = _tiny_config("gymnax:Catch-bsuite", batch_size=4)
    trainer = make_train(config)

    def init_fails(seed):
        raise RuntimeError("compilation failed")

    monkeypatch.setattr(
        run_lib, "make_train", lambda config: dataclasses.replace(trainer, init=init_fails)
    )
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "notes.txt").write_text("mine")
    for workdir in (tmp_path / "new" / "run", existing):
        with pytest.raises(RuntimeError, match="compilation failed"):
            run_lib.run_training(config, workdir)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]
    assert [p.name for p in existing.iterdir()] == ["notes.txt"]


def test_help_into_a_closed_pipe_stops_quietly():
    process = subprocess.Popen(
        [sys.executable, "-m", "mz_jax.cli.main", "train", "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader is gone before the first line, as with `| head -0`
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_BROKEN_PIPE, err
    assert err == b""


# ---------------------------------------------------------------------------------------------------
# Checkpoints: every one corrupted


def _tiny_state(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"w": jnp.asarray(rng.standard_normal((8, 4)), jnp.float32), "step": jnp.int32(seed)}


def _abstract(state: dict) -> dict:
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), state)


def _garble_manifests(checkpoint: Path) -> None:
    for path in checkpoint.rglob("manifest.ocdbt"):
        path.write_bytes(b"\0" * 10)


def _empty_data_files(checkpoint: Path) -> None:
    for path in (checkpoint / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.write_bytes(b"")


def _garble_metadata(checkpoint: Path) -> None:
    (checkpoint / "state" / "_METADATA").write_text("{garbage")


@pytest.mark.parametrize("corrupt", [_garble_manifests, _empty_data_files, _garble_metadata])
def test_every_checkpoint_corrupted_is_one_line_saying_so(tmp_path, capfd, corrupt):
    checkpointer = checkpoint_lib.Checkpointer(tmp_path)
    for step in (1, 2):
        assert checkpointer.save(step, _tiny_state(step))
    checkpointer.close()
    for step in (1, 2):
        corrupt(tmp_path / "checkpoints" / str(step))
    capfd.readouterr()

    checkpointer = checkpoint_lib.Checkpointer(tmp_path)
    with pytest.raises(checkpoint_lib.CheckpointError) as error:
        checkpointer.restore_latest(_abstract(_tiny_state(0)))
    checkpointer.close()
    time.sleep(0.2)  # TensorStore's late callbacks, if any, land now
    message = str(error.value)
    assert "\n" not in message and len(message) < 700, message
    assert message.startswith(f"all 2 checkpoints in {tmp_path / 'checkpoints'} are unreadable")
    assert "shapes" not in message and "tensorstore_spec" not in message
    assert "TensorStore(" not in message
    assert error.value.corrupt
    err = capfd.readouterr().err
    assert "Event loop is closed" not in err and "Traceback" not in err, err
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["1", "2"]  # unmoved


def test_cli_with_every_checkpoint_corrupted_says_so_in_one_line(tmp_path, capsys):
    checkpointer = checkpoint_lib.Checkpointer(tmp_path)
    assert checkpointer.save(4, _tiny_state(4))
    checkpointer.close()
    _garble_manifests(tmp_path / "checkpoints" / "4")
    status, err = _run_cli(["train", *TINY, "--workdir", str(tmp_path)], capsys)
    assert status == EXIT_FAILED
    (line,) = _error_lines(err)
    assert line.startswith(
        f"mz-jax train: error: training stopped: the only checkpoint in {tmp_path}/checkpoints "
        "is unreadable or corrupt (4 is unreadable"
    ), line
    assert line.endswith(f"(traceback in {tmp_path}/errors.log)"), line
    assert "shapes" not in line


# ---------------------------------------------------------------------------------------------------
# Metrics files: written through at every record, a full disk named


def test_metrics_files_are_created_with_the_first_record_and_flushed(tmp_path):
    logger = MetricsLogger(tmp_path)
    assert list(tmp_path.iterdir()) == []  # a start that fails before its first record: no file
    logger.write(step=0, env_steps=32, wall_s=1.0, **{"loss/total": 1.5})
    (events,) = (tmp_path / "tensorboard").iterdir()
    # Before close: a kill now leaves both files complete, not a 0-byte events file.
    assert events.stat().st_size > 0
    assert read_metrics(tmp_path) == [
        {"step": 0, "env_steps": 32, "wall_s": 1.0, "loss/total": 1.5}
    ]
    logger.close()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_full_disk_under_metrics_names_the_file(tmp_path):
    (tmp_path / "metrics.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    logger = MetricsLogger(tmp_path)
    with pytest.raises(MetricsWriteError) as error:
        logger.write(step=0, env_steps=32, wall_s=1.0, **{"loss/total": 1.5})
    logger.close()
    assert str(error.value) == (
        f"writing metrics to {tmp_path / 'metrics.jsonl'} failed: [Errno 28] No space left on "
        "device"
    )


def test_full_disk_under_tensorboard_names_the_directory(tmp_path, monkeypatch):
    from tensorboardX.event_file_writer import EventsWriter

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(EventsWriter, "flush", flush)
    logger = MetricsLogger(tmp_path)
    with pytest.raises(MetricsWriteError, match=r"writing TensorBoard events to .*tensorboard "):
        logger.write(step=0, env_steps=32, wall_s=1.0, **{"loss/total": 1.5})
    logger.close()


# ---------------------------------------------------------------------------------------------------
# Resuming with another length


def test_total_env_steps_may_change_on_resume_but_not_the_run(tmp_path):
    saved = mz_jax.TrainConfig(total_env_steps=1000, log_every_seconds=5.0)
    assert check_config(tmp_path, saved, allow_config_change=False) == []
    longer = saved.replace(total_env_steps=3000, log_every_seconds=1.0)
    assert check_config(tmp_path, longer, allow_config_change=False) == [
        "log_every_seconds: 5.0 -> 1.0",
        "total_env_steps: 1000 -> 3000",
    ]
    assert json.loads((tmp_path / "config.json").read_text())["total_env_steps"] == 3000
    with pytest.raises(ValueError, match=r"discount: 0\.99 -> 0\.9$"):
        check_config(tmp_path, longer.replace(discount=0.9), allow_config_change=False)


# ---------------------------------------------------------------------------------------------------
# Library inputs: the loss, scale_gradient, Agent.act

NUM_ACTIONS, BINS = 2, 5


def _two_action_network() -> MuZeroNetwork:
    def outputs(params, s):
        return ModelOutput(s @ params["value"], s @ params["reward"], s @ params["policy"])

    def initial_inference(params, observation):
        s = jnp.tanh(observation @ params["repr"])
        return outputs(params, s), s

    def recurrent_inference(params, hidden, action):
        x = jnp.concatenate([hidden, jax.nn.one_hot(action, NUM_ACTIONS)], axis=-1)
        s = jnp.tanh(x @ params["dynamics"])
        return outputs(params, s), s

    return MuZeroNetwork(initial_inference, recurrent_inference)


def _params() -> dict:
    shapes = {"repr": (3, 4), "dynamics": (6, 4), "value": (4, BINS), "reward": (4, BINS)}
    shapes["policy"] = (4, NUM_ACTIONS)
    keys = jax.random.split(jax.random.key(0), len(shapes))
    return {n: jax.random.normal(k, s) for k, (n, s) in zip(keys, shapes.items(), strict=True)}


def _batch(b: int = 8, k: int = 6) -> Batch:
    return Batch(
        observation=jnp.ones((b, 3)),
        actions=jnp.zeros((b, k), jnp.int32),
        target_value=jnp.zeros((b, k + 1)),
        target_reward=jnp.zeros((b, k + 1)),
        target_policy=jnp.full((b, k + 1, NUM_ACTIONS), 1.0 / NUM_ACTIONS),
        mask=jnp.ones((b, k + 1)),
        weight=jnp.ones((b,)),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"actions": jnp.zeros((8, 7), jnp.int32)},
            r"batch\.actions must have shape \[B, K\] = \(8, 6\) .*; got \(8, 7\)",
        ),
        (
            {"target_policy": jnp.full((8, 7, 3), 1 / 3)},
            r"batch\.target_policy has A = 3 actions on its last axis, but the network's policy "
            r"logits have 2",
        ),
        (
            {"actions": jnp.zeros((8, 6), jnp.int32).at[3, 1].set(7)},
            r"batch\.actions must be in \[0, A\) = \[0, 2\); got 7 at \[3, 1\]",
        ),
        (
            {"actions": jnp.zeros((8, 6), jnp.int32).at[0, 0].set(-1)},
            r"batch\.actions must be in \[0, A\) = \[0, 2\); got -1 at \[0, 0\]",
        ),
        ({"target_value": jnp.zeros((8, 7), jnp.int32)}, r"batch\.target_value must be floating"),
        ({"weight": jnp.ones((8, 1))}, r"batch\.weight must have shape \[B\]; got shape \(8, 1\)"),
        (
            {"observation": jnp.ones((7, 3))},
            r"batch\.observation must have shape \[B, \.\.\.\] = \(8, \.\.\.\)",
        ),
    ],
)
def test_loss_input_errors_name_the_field_at_fault(change, message):
    mz_jax.core.loss.check_batch(_batch(), num_actions=NUM_ACTIONS)  # the unchanged batch is fine
    loss_fn = make_loss_fn(_two_action_network())
    # Shapes and dtypes are checked while tracing (under jit, compiling nothing); action values
    # only where they are known: called eagerly.
    eager = "must be in" in message
    with pytest.raises(ValueError, match=message):
        (loss_fn if eager else jax.jit(loss_fn))(_params(), _batch()._replace(**change))


def test_out_of_range_actions_under_jit_are_documented_as_unchecked():
    """Under jit the action values are unknown: the docstring says they pass unchecked, and the
    mz_jax-style one-hot encodes them as no action (the loss differs from action 0's)."""
    assert "under ``jit`` or ``vmap`` the values are" in mz_jax.core.loss.check_batch.__doc__
    loss_fn = jax.jit(make_loss_fn(_two_action_network()))
    out_of_range = loss_fn(_params(), _batch()._replace(actions=jnp.full((8, 6), 7, jnp.int32)))
    action_0 = loss_fn(_params(), _batch())
    assert np.isfinite(out_of_range[0]) and out_of_range[0] != action_0[0]


def test_scale_gradient_passes_integer_leaves_through():
    tree = {"x": jnp.arange(3.0), "n": jnp.arange(3)}
    loss = lambda t: jnp.sum(scale_gradient(t, 0.5)["x"] ** 2)
    for grad in (jax.grad(loss, allow_int=True), jax.jit(jax.grad(loss, allow_int=True))):
        grads = grad(tree)
        np.testing.assert_array_equal(grads["x"], 0.5 * 2 * np.arange(3.0))  # 0.5 * d(x^2)/dx
        assert grads["n"].dtype == jax.dtypes.float0 and grads["n"].shape == (3,)


def test_agent_acts_on_an_empty_batch():
    config = _tiny_config("gymnax:CartPole-v1", batch_size=8)
    agent = Agent(config, mz_jax.build(config).init_params(jax.random.key(0)))
    actions = agent.act(jax.random.key(1), jnp.zeros((0, 4)))
    assert actions.shape == (0,) and actions.dtype == jnp.int32
    with pytest.raises(ValueError, match=r"legal_action_mask must have shape \[B, A\] = \(0, 2\)"):
        agent.act(jax.random.key(1), jnp.zeros((0, 4)), jnp.ones((1, 2), bool))
