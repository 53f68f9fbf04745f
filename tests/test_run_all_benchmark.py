"""``benchmarks/run_all.py``: ``--quick`` writes a result file of the schema where it is told to,
and the training tables hold numbers as numbers."""

import datetime
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mz_jax import TrainConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import results
import run_all
import training

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("1,310,537", 1310537),
        ("225", 225),
        ("-499", -499),
        ("12.24", 12.24),
        ("1.67x", "1.67x"),
        ("8.5%", "8.5%"),
        ("1,23", "1,23"),
        ("gymnax:CartPole-v1", "gymnax:CartPole-v1"),
        (np.int64(3), 3),
        (np.float32(0.5), 0.5),
    ],
)
def test_cell_value(cell, value):
    converted = run_all.cell_value(cell)
    assert converted == value and type(converted) is type(value)


def test_training_tables_of_measurements_by_hand():
    # Numbers chosen so every figure is exact: 100 MFLOP in 4 ms is 25 GFLOP/s, a quarter of the
    # peak's 2 * 1000^3 FLOPs in 20 ms; 64 env steps an iteration at 3,200/s is 20 ms.
    single = training.LoopTiming(1, 12.0, 3200.0, 200.0, 64)
    vmapped = training.LoopTiming(4, 14.0, 4800.0, 300.0, 256)
    measured = training.Results(
        config=TrainConfig(),
        peak=training.MatmulPeak(size=1000, seconds=0.02),
        update=training.UpdateTiming(128, 5, 33196, 5.0, 0.004, 100e6),
        single=single,
        seeds=training.SeedsComparison(vmapped, single, total_env_steps=200_000),
        per_call=(single, training.LoopTiming(1, 15.0, 6400.0, 400.0, 64, 8)),
    )
    update, end_to_end, seeds, per_call = run_all.training_tables(measured, training.Settings())
    assert update["rows"] == [[128, 5, 33196, 5.0, 4.0, 250, 100.0, 25.0, 100.0, "25%"]]
    assert "25% of the rate of one large product" in update["note"]
    assert end_to_end["rows"] == [[12.0, 20.0, 3200, 200]]
    # Projected: compile s + 4 seeds x 200,000 steps / throughput (12 + 250; 14 + 166.7).
    assert seeds["columns"][-1] == "projected s for 4 x 200,000 steps"
    assert seeds["rows"] == [
        ["sequential", 12.0, 3200, 200, "1.00x", 262],
        ["vmapped", 14.0, 4800, 300, "1.50x", 181],
    ]
    assert per_call["rows"] == [[1, 12.0, 20.0, 3200, "1.00x"], [8, 15.0, 10.0, 6400, "2.00x"]]


@pytest.mark.slow
def test_quick_run_writes_a_result_file_of_the_schema_where_told(tmp_path):
    committed = results.RESULTS_DIR / "performance.json"
    before = committed.read_bytes() if committed.exists() else None
    out = tmp_path / "performance.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/run_all.py", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = results.validate(json.loads(out.read_text()), out)
    assert result["name"] == "performance"
    tables = result["tables"]
    assert [len(t["rows"]) for t in tables] == [1, 1, 1, 4]  # loss, search, self-play, seconds
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    for t in tables:
        assert t["columns"] and t["rows"] and t["note"]
        assert t["date"] == today
        assert "CPU cores" in t["machine"]
        assert t["command"] == f"python benchmarks/run_all.py --quick --out {out}"
    assert [row[0] for row in tables[-1]["rows"]] == ["loss unroll", "search", "self-play", "total"]
    # Nothing written into the repository.
    assert (committed.read_bytes() if committed.exists() else None) == before
