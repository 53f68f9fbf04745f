"""Past one process: two local processes over ``jax.distributed`` train as one data-parallel program.

Each process (tests/_distributed_worker.py) owns two forced CPU devices; ``make_train`` builds its mesh
over all four devices of both processes, so gradients are averaged across the process boundary by gloo
CPU collectives. After two iterations both processes must hold the same parameters, and those must
differ from the initial ones.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

WORKER = pathlib.Path(__file__).with_name("_distributed_worker.py")
TIMEOUT_S = 400  # compile-bound; generous because the CI machine's two cores are shared


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    # Two devices per process, replacing the four that conftest.py forces on the test process; the
    # test is compile-bound, and a lighter LLVM pipeline compiles the step about a third faster.
    env["XLA_FLAGS"] = (
        "--xla_force_host_platform_device_count=2 "
        "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    )
    env["JAX_PLATFORMS"] = "cpu"
    return env


def test_two_processes_train_identical_parameters(tmp_path):
    port = _free_port()
    outputs = [tmp_path / f"process_{i}.json" for i in range(2)]
    logs = [open(tmp_path / f"process_{i}.log", "w+") for i in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(port), str(i), str(outputs[i])],
            env=_worker_env(),
            stdout=logs[i],
            stderr=subprocess.STDOUT,
        )
        for i in range(2)
    ]
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for process in processes:
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        # A process whose peer died waits in a collective until killed.
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    def tail(i: int) -> str:
        logs[i].seek(0)
        return f"--- process {i} (exit {processes[i].returncode}) ---\n{logs[i].read()[-3000:]}"

    report = "\n".join(tail(i) for i in range(2))
    for log in logs:
        log.close()
    assert all(p.returncode == 0 for p in processes), report

    results = [json.loads(path.read_text()) for path in outputs]
    assert [r["process_index"] for r in results] == [0, 1]
    assert all(r["num_devices"] == 4 for r in results)
    assert all(r["iteration"] == 2 for r in results)
    assert all(r["updates"] >= 1 for r in results), results
    # Both processes start from the same seed and apply the same averaged gradient.
    assert results[0]["initial_digest"] == results[1]["initial_digest"]
    assert results[0]["digest"] == results[1]["digest"], results
    assert results[0]["digest"] != results[0]["initial_digest"], "the parameters never changed"
    assert results[0]["losses"] == results[1]["losses"]
