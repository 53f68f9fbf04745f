"""``benchmarks/gpu.py --smoke``: every part of the GPU lease script runs on the CPU and leaves
complete, well-formed results, so a lease is never lost to a typo."""

import datetime
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu


def finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def run_smoke(tmp_path_factory):
    """One smoke run of every part: (exit status, out dir)."""
    out_dir = tmp_path_factory.mktemp("gpu_smoke")
    return gpu.main(["--smoke", "--out-dir", str(out_dir)]), out_dir


def check_every_part_finishes(smoke_run):
    status, out_dir = smoke_run
    run = json.loads((out_dir / "results.json").read_text())["runs"][-1]
    assert {name: part["status"] for name, part in run["parts"].items()} == {
        name: "done" for name in gpu.PARTS
    }
    assert status == 0


def check_results_hold_every_key_with_a_number(smoke_run):
    _, out_dir = smoke_run
    results = json.loads((out_dir / "results.json").read_text())
    assert len(results["runs"]) == 1
    run = results["runs"][0]
    assert run["smoke"] is True
    assert run["device"]["platform"] == "cpu" and run["device"]["kind"]
    assert run["commit"] and run["command"].startswith("python benchmarks/gpu.py --smoke")
    assert datetime.datetime.strptime(run["date"], "%Y-%m-%dT%H:%M:%SZ")
    assert {"jax", "jaxlib", "flax", "optax", "mctx", "gymnax", "pgx"} <= set(run["versions"])
    assert all(isinstance(run["versions"][name], str) for name in ("jax", "mctx", "pgx"))

    for dtype in ("bfloat16", "float32"):
        assert run["matmul"][dtype]["flops_per_s"] > 0 and run["matmul"][dtype]["size"] > 0
    assert run["learner"]["dtype"] == "bfloat16"
    assert finite(run["learner"]["share_of_peak"]) and run["learner"]["share_of_peak"] > 0
    assert run["search"]["roots"] == 32
    assert finite(run["search"]["simulations_per_s"]) and run["search"]["simulations_per_s"] > 0
    minatar = run["minatar"]
    assert minatar["num_envs"] == 4
    assert finite(minatar["env_steps_per_s"]) and minatar["env_steps_per_s"] > 0
    assert finite(minatar["baseline_env_steps_per_s"]) and minatar["baseline_env_steps_per_s"] > 0
    suite = run["minatar_suite"]
    assert finite(suite["wall_s"]) and suite["wall_s"] > 0
    assert finite(suite["iqm"])  # one game, one seed, finished: its normalised return
    assert suite["games_done"] == suite["games"] == 1 and suite["stopped"] is False


def check_rows_of_each_part_are_recorded(smoke_run):
    _, out_dir = smoke_run
    rows = json.loads((out_dir / "results.json").read_text())["runs"][0]["rows"]
    assert [row["dtype"] for row in rows["matmul"]] == ["bfloat16", "float32"]
    assert len(rows["learner"]) == 1  # the smoke run times the headline network alone
    assert all(row["ms/update"] > 0 and row["GFLOP/update"] > 0 for row in rows["learner"])
    assert [row["simulations"] for row in rows["search"]] == [2]
    assert [row["preset"] for row in rows["minatar"]] == ["minatar_gpu", "breakout_minatar"]
    assert rows["suite"][0]["games done"] == "1/1"


def check_the_markdown_section_names_the_date_the_device_and_each_table(smoke_run):
    _, out_dir = smoke_run
    run = json.loads((out_dir / "results.json").read_text())["runs"][0]
    text = (out_dir / "RESULTS-gpu-section.md").read_text()
    assert text.startswith(f"## {run['date'][:10]}: cpu, commit {run['commit']}\n")
    assert run["command"] in text
    for header in ("| dtype", "| preset", "share of bf16 matmul peak", "simulations/s"):
        assert header in text
    assert "env steps/s" in text and "| suite" in text and "IQM" in text


def check_suite_report_is_copied_next_to_the_results(smoke_run):
    _, out_dir = smoke_run
    copied = json.loads((out_dir / "minatar_suite_results.json").read_text())
    assert list(copied["environments"]) == ["gymnax:Breakout-MinAtar"]  # the preset's game
    assert (out_dir / "minatar_suite_report.md").read_text().strip()


def test_a_run_appends_to_the_runs_already_there(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"runs": [{"date": "earlier"}]}))
    assert gpu.main(["--smoke", "--parts", "matmul", "--out-dir", str(tmp_path)]) == 0
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert runs[0] == {"date": "earlier"}
    assert len(runs) == 2 and list(runs[1]["parts"]) == ["matmul"]
    assert runs[1]["matmul"]["float32"]["size"] > 0


def test_print_setup_pins_the_carried_packages(capsys):
    assert gpu.main(["--print-setup"]) == 0
    download, lease = [line for line in capsys.readouterr().out.splitlines() if line[0] != "#"]
    assert "--python-version 3.12" in download and " -d .whl " in download
    for name in ("mctx", "rlax", "gymnax", "pgx", "tyro"):
        assert f" {name}==" in download
    assert "--no-index" in lease and ".whl/*.whl" in lease and "PYTHONPATH" in lease
    assert lease.endswith(
        "python3 benchmarks/gpu.py --out-dir $OUT --suite-workdir /tmp/minatar_suite"
    )


def test_a_child_past_its_time_gets_one_sigint_and_may_save(tmp_path):
    # A stand-in for `mz-jax suite`: the first SIGINT "saves" and exits 75, a second would not.
    child = (
        "import signal, sys, time\n"
        "def stop(signum, frame):\n"
        "    print('saved', flush=True)\n"
        "    sys.exit(75)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('training', flush=True)\n"
        "time.sleep(60)\n"
    )
    budget = gpu.Budget(time.monotonic() + 2.0)
    code, stopped = gpu.run_until([sys.executable, "-c", child], budget, tmp_path / "log")
    assert (code, stopped) == (75, True)
    assert (tmp_path / "log").read_text() == "training\nsaved\n"


def test_smoke_run(tmp_path_factory):
    """One smoke run (its checks above, in one test so that parallel workers do not each run it)."""
    smoke_run = run_smoke(tmp_path_factory)
    check_every_part_finishes(smoke_run)
    check_results_hold_every_key_with_a_number(smoke_run)
    check_rows_of_each_part_are_recorded(smoke_run)
    check_the_markdown_section_names_the_date_the_device_and_each_table(smoke_run)
    check_suite_report_is_copied_next_to_the_results(smoke_run)
