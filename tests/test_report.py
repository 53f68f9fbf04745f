"""The suite report (mz_jax.suite.report, `mz-jax report`) on a fake suite; the shipped reference scores."""

import json
import math
import re
from pathlib import Path

import pytest

from mz_jax.cli.main import main
from mz_jax.run import plots, records
from mz_jax.run.metrics import EVAL_RETURN, LOSS, TRAIN_RETURN
from mz_jax.run.workdir import sanitise
from mz_jax.suite import aggregate, report
from mz_jax.suite import results as suite_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SUITES = {
    "classic": [
        "gymnax:CartPole-v1",
        "gymnax:Acrobot-v1",
        "gymnax:MountainCar-v0",
        "gymnax:Catch-bsuite",
    ],
    "minatar": [
        "gymnax:Asterix-MinAtar",
        "gymnax:Breakout-MinAtar",
        "gymnax:Freeway-MinAtar",
        "gymnax:SpaceInvaders-MinAtar",
    ],
    "board": ["pgx:tic_tac_toe", "pgx:connect_four"],
}

CARTPOLE_FINALS = [100.0, 200.0, 360.0]
CARTPOLE_BESTS = [150.0, 250.0, 400.0]
TTT_FINALS = [0.5, 0.75, 1.0]
TTT_BESTS = [0.75, 0.75, 1.0]
# Normalisation ends chosen for hand arithmetic.
REFERENCES = {
    "gymnax:CartPole-v1": aggregate.ReferenceScore(0.0, 400.0, "by hand", "by hand"),
    "pgx:tic_tac_toe": aggregate.ReferenceScore(0.0, 1.0, "zero by symmetry", "wins every game"),
    "gymnax:Breakout-MinAtar": aggregate.ReferenceScore(0.0, 28.0, "measured", "gymnax README"),
}


def _seed_rows(finals, bests, env_steps):
    return [
        {"seed": s, "final_return": f, "best_return": b, "env_steps": env_steps, "wall_s": 10.0}
        for s, (f, b) in enumerate(zip(finals, bests, strict=True))
    ]


def _write_metrics(workdir, lines):
    workdir.mkdir(parents=True)
    (workdir / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def _eval_record(seed, env_steps, value):
    return json.dumps({"seed": seed, "env_steps": env_steps, EVAL_RETURN: value})


@pytest.fixture
def suite_dir(tmp_path):
    """Two finished environments x 3 seeds, and one that did not finish (no metrics at all)."""
    results = {
        "suite": "fake",
        "num_seeds": 3,
        "seeds": [0, 1, 2],
        "environments": {
            "gymnax:CartPole-v1": {
                "preset": "cartpole",
                "workdir": "gymnax_CartPole-v1",
                "done": True,
                "env_steps": 120000,
                "wall_s": 95.2,
                "seeds": _seed_rows(CARTPOLE_FINALS, CARTPOLE_BESTS, 120000),
            },
            "pgx:tic_tac_toe": {
                "preset": "tic_tac_toe",
                "workdir": "pgx_tic_tac_toe",
                "done": True,
                "env_steps": 30000,
                "wall_s": 4000.0,
                "seeds": _seed_rows(TTT_FINALS, TTT_BESTS, 30000),
            },
            "gymnax:Breakout-MinAtar": {
                "preset": "breakout_minatar",
                "workdir": "gymnax_Breakout-MinAtar",
                "done": False,
                "env_steps": 50000,
                "wall_s": 30.0,
                "seeds": [],
            },
        },
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    cartpole = [
        json.dumps({"seed": 0, "env_steps": 500, LOSS: 1.0, TRAIN_RETURN: None}),
        *[_eval_record(s, 1000, 20.0 + s) for s in range(3)],
        *[_eval_record(s, 2000, f) for s, f in enumerate(CARTPOLE_FINALS)],
        _eval_record(1, 3000, "nan"),  # skipped
        '{"seed": 2, "env_steps": 30',  # a line cut short by a crash: skipped
    ]
    _write_metrics(tmp_path / "gymnax_CartPole-v1", cartpole)
    ttt = [_eval_record(s, steps, 0.25 * s) for steps in (1000, 2000) for s in range(3)]
    _write_metrics(tmp_path / "pgx_tic_tac_toe", ttt)
    return tmp_path


def _row(markdown: str, name: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_report_table_holds_the_numbers(suite_dir):
    path = report.write_report(suite_dir, references=REFERENCES, num_resamples=300)
    assert path == suite_dir / "report.md"
    markdown = path.read_text()

    # CartPole: mean 220, sample std sqrt(((-120)^2 + (-20)^2 + 140^2) / 2) = sqrt(17200);
    # normalised by 400: 0.25, 0.5, 0.9, mean 0.55.
    assert _row(markdown, "gymnax:CartPole-v1") == [
        "gymnax:CartPole-v1",
        "done",
        "3/3",
        f"220.00 ± {math.sqrt(17200.0):.2f}",
        "100.00 – 360.00",
        f"{800.0 / 3.0:.2f}",
        "0.55",
        "120,000",
        "95 s",
    ]
    # Tic-tac-toe: mean 0.75, std sqrt((0.0625 + 0 + 0.0625) / 2) = 0.25; 4000 s is 66.7 min.
    assert _row(markdown, "pgx:tic_tac_toe") == [
        "pgx:tic_tac_toe",
        "done",
        "3/3",
        "0.75 ± 0.25",
        "0.50 – 1.00",
        f"{2.5 / 3.0:.2f}",
        "0.75",
        "30,000",
        "66.7 min",
    ]
    assert _row(markdown, "gymnax:Breakout-MinAtar")[1:3] == ["incomplete", "0/3"]


def test_report_aggregates_only_finished_environments(suite_dir):
    markdown = report.write_report(suite_dir, references=REFERENCES, num_resamples=300).read_text()
    assert "of 2 environment(s) × 3 seed(s): gymnax:CartPole-v1, pgx:tic_tac_toe" in markdown
    # Normalised finals, runs x tasks: CartPole 0.25, 0.5, 0.9; tic-tac-toe 0.5, 0.75, 1.0.
    # Task means 0.55 and 0.75: mean = median = 0.65. IQM: of 0.25, 0.5, 0.5, 0.75, 0.9, 1.0 one
    # is cut from each end, leaving 0.5, 0.5, 0.75, 0.9.
    by_hand = {"Mean": 0.65, "Median": 0.65, "IQM": (0.5 + 0.5 + 0.75 + 0.9) / 4}
    for label, value in by_hand.items():
        match = re.search(rf"^\| {label} \| (\S+) \| \[(\S+), (\S+)\] \|$", markdown, re.M)
        assert match is not None, label
        estimate, low, high = (float(g) for g in match.groups())
        assert estimate == pytest.approx(value, abs=5e-4)
        # A resample's task means stay within each task's runs: [0.25, 0.9] and [0.5, 1.0].
        assert (0.25 + 0.5) / 2 <= low <= estimate <= high <= (0.9 + 1.0) / 2
    assert "## Incomplete environments" in markdown
    incomplete = markdown.split("## Incomplete environments")[1].split("##")[0]
    assert "- gymnax:Breakout-MinAtar" in incomplete
    assert "gymnax:CartPole-v1" not in incomplete
    # The normalisation's sources are listed.
    assert "| pgx:tic_tac_toe | 0 | 1 | zero by symmetry | wins every game |" in markdown


def _games(wins, draws, losses, unfinished=0):
    return {"wins": wins, "draws": draws, "losses": losses, "unfinished": unfinished}


def test_report_games_against_an_opponent(suite_dir):
    markdown = report.write_report(suite_dir, references=REFERENCES, num_resamples=100).read_text()
    assert "Against an opponent" not in markdown  # no environment played one
    results = json.loads((suite_dir / "results.json").read_text())
    ttt = results["environments"]["pgx:tic_tac_toe"]
    # 8 games a seed, 4 in each seat; seed 2's were not played (the run was stopped).
    ttt["seeds"][0]["opponent"] = {
        "name": "mcts:1000",
        "episodes": 8,
        "max_steps": 9,
        "total": _games(1, 6, 1),
        "moving_first": _games(1, 3, 0),
        "moving_second": _games(0, 3, 1),
    }
    ttt["seeds"][1]["opponent"] = {
        "name": "mcts:1000",
        "episodes": 8,
        "max_steps": 9,
        "total": _games(0, 7, 0, 1),
        "moving_first": _games(0, 4, 0),
        "moving_second": _games(0, 3, 0, 1),
    }
    results["environments"]["gymnax:Breakout-MinAtar"]["opponent_error"] = "no checkpoint"
    (suite_dir / "results.json").write_text(json.dumps(results))
    markdown = report.write_report(suite_dir, references=REFERENCES, num_resamples=100).read_text()
    section = markdown.split("## Against an opponent")[1].split("\n## ")[0]
    assert "### pgx:tic_tac_toe" in section and "gymnax:CartPole-v1" not in section
    table = section.split("### pgx:tic_tac_toe")[1].split("###")[0]
    assert _row(table, "0") == [
        "0",
        "mcts:1000",
        "8",
        "25.0% / 75.0% / 0.0%",
        "0.0% / 75.0% / 25.0%",
        "12.5% / 75.0% / 12.5%",
    ]
    assert _row(table, "1") == [
        "1",
        "mcts:1000",
        "8",
        "0.0% / 100.0% / 0.0%",
        "0.0% / 75.0% / 0.0% (25.0% unfinished)",
        "0.0% / 87.5% / 0.0% (12.5% unfinished)",
    ]
    assert "| 2 |" not in table
    breakout = section.split("### gymnax:Breakout-MinAtar")[1]
    assert "Games against the opponent not played: no checkpoint" in breakout


def test_report_writes_png_curves(suite_dir):
    markdown = report.write_report(suite_dir, references=REFERENCES, num_resamples=100).read_text()
    for name in ("gymnax_CartPole-v1", "pgx_tic_tac_toe"):
        png = suite_dir / "curves" / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC
        assert f"](curves/{name}.png)" in markdown
    assert (suite_dir / "curves.png").read_bytes()[:8] == PNG_MAGIC
    assert not (suite_dir / "curves" / "gymnax_Breakout-MinAtar.png").exists()
    assert "No evaluation records (metrics.jsonl) for: gymnax:Breakout-MinAtar." in markdown
    assert "the band spans the minimum to the maximum across seeds" in markdown


def test_report_is_deterministic(suite_dir):
    first = report.write_report(suite_dir, references=REFERENCES, num_resamples=200).read_text()
    again = report.write_report(suite_dir, references=REFERENCES, num_resamples=200).read_text()
    assert first == again


def test_environment_without_reference_is_listed_not_normalised(suite_dir):
    references = {"pgx:tic_tac_toe": REFERENCES["pgx:tic_tac_toe"]}
    markdown = report.write_report(suite_dir, references=references, num_resamples=100).read_text()
    assert _row(markdown, "gymnax:CartPole-v1")[6] == "—"
    assert (
        "Not normalised (no reference score in the data file), left out: gymnax:CartPole-v1."
        in (markdown)
    )
    assert "of 1 environment(s) × 3 seed(s): pgx:tic_tac_toe" in markdown


def test_evaluation_curves_per_seed(suite_dir):
    curves = records.evaluation_curves(suite_dir / "gymnax_CartPole-v1")
    assert sorted(curves) == [0, 1, 2]
    assert curves[1].env_steps.tolist() == [1000, 2000]  # the "nan" at 3000 is skipped
    assert curves[1].returns.tolist() == [21.0, 200.0]
    assert curves[2].returns.tolist() == [22.0, 360.0]


def test_evaluation_curves_single_seed_and_repeated_steps(tmp_path):
    # No "seed" key (one-seed run); a resumed run evaluated twice at 2000 steps: the last is kept.
    lines = [
        json.dumps({"env_steps": 2000, EVAL_RETURN: 1.0}),
        json.dumps({"env_steps": 1000, EVAL_RETURN: 0.5}),
        json.dumps({"env_steps": 1500, TRAIN_RETURN: 9.0, LOSS: "inf"}),
        json.dumps({"env_steps": 2000, EVAL_RETURN: 3.0}),
    ]
    _write_metrics(tmp_path / "run", lines)
    curves = records.evaluation_curves(tmp_path / "run", default_seed=7)
    assert list(curves) == [7]
    assert curves[7].env_steps.tolist() == [1000, 2000]
    assert curves[7].returns.tolist() == [0.5, 3.0]
    assert records.evaluation_curves(tmp_path / "missing") == {}


def test_learning_curve_of_a_multi_seed_run(tmp_path):
    # Training returns are missing (null) where no episode ended; evaluations come every 2 records.
    lines = [
        json.dumps(
            {
                "seed": seed,
                "env_steps": 100 * step,
                TRAIN_RETURN: None if step == 1 and seed == 1 else float(step + seed),
                **({EVAL_RETURN: float(step)} if step % 2 == 0 else {}),
            }
        )
        for step in range(1, 5)
        for seed in (0, 1)
    ]
    _write_metrics(tmp_path / "run", lines)
    path = plots.plot_learning_curve(tmp_path / "run", title="fake")
    assert path == tmp_path / "run" / "learning_curve.png"
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert plots.plot_learning_curve(tmp_path) is None  # no metrics.jsonl: nothing drawn
    assert not (tmp_path / "learning_curve.png").exists()


def test_report_command_regenerates_the_report(suite_dir, tmp_path, capsys):
    references = tmp_path / "references.json"
    references.write_text(
        json.dumps({"environments": {k: v._asdict() for k, v in REFERENCES.items()}})
    )
    argv = ["report", str(suite_dir), "--references", str(references), "--num-resamples", "100"]
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().out
    assert _row((suite_dir / "report.md").read_text(), "pgx:tic_tac_toe")[6] == "0.75"


def test_export_copies_the_finished_environments_without_checkpoints(suite_dir, tmp_path, capsys):
    for name in ("gymnax_CartPole-v1", "pgx_tic_tac_toe"):
        (suite_dir / name / "config.json").write_text(json.dumps({"env": name}))
        (suite_dir / name / "checkpoints" / "100").mkdir(parents=True)
        (suite_dir / name / "checkpoints" / "100" / "state").write_bytes(b"\0" * 64)
    dest = tmp_path / "exported"
    argv = ["report", str(suite_dir), "--export", str(dest), "--num-resamples", "100"]
    assert main(argv) == 0
    assert "exported 2 finished environment(s)" in capsys.readouterr().out

    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert [p for p in copied if not p.startswith("curves")] == [
        "gymnax_CartPole-v1/config.json",
        "gymnax_CartPole-v1/metrics.jsonl",
        "pgx_tic_tac_toe/config.json",
        "pgx_tic_tac_toe/metrics.jsonl",
        "report.md",
        "results.json",
    ]
    for name in ("gymnax_CartPole-v1/metrics.jsonl", "pgx_tic_tac_toe/config.json"):
        assert (dest / name).read_bytes() == (suite_dir / name).read_bytes()
    # results.json keeps everything but the unfinished environment.
    original = json.loads((suite_dir / "results.json").read_text())
    exported = json.loads((dest / "results.json").read_text())
    del original["environments"]["gymnax:Breakout-MinAtar"]
    assert exported == original
    # The report written there has the finished environments' rows and curves, as in place.
    assert main(["report", str(suite_dir), "--num-resamples", "100"]) == 0
    in_place, there = (suite_dir / "report.md").read_text(), (dest / "report.md").read_text()
    for name in ("gymnax:CartPole-v1", "pgx:tic_tac_toe"):
        assert _row(there, name) == _row(in_place, name)
    assert "gymnax:Breakout-MinAtar" not in there
    assert (dest / "curves" / "gymnax_CartPole-v1.png").read_bytes()[:8] == PNG_MAGIC

    # Refused: into itself; a finished environment without its configuration.
    with pytest.raises(ValueError, match="into itself"):
        suite_results.export_finished(suite_dir, suite_dir)
    (suite_dir / "pgx_tic_tac_toe" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"pgx_tic_tac_toe/config\.json is missing"):
        suite_results.export_finished(suite_dir, tmp_path / "again")
    assert not (tmp_path / "again").exists()


def test_missing_or_malformed_results(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no results\.json"):
        report.write_report(tmp_path)
    (tmp_path / "results.json").write_text('{"suite": "x"}')
    with pytest.raises(ValueError, match="'environments'"):
        report.write_report(tmp_path)


def test_report_command_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "mz-jax report: error:" in err and "no results.json" in err
    assert "Traceback" not in err


def test_sanitise():
    assert sanitise("gymnax:CartPole-v1") == "gymnax_CartPole-v1"
    assert sanitise("custom:a/b c") == "custom_a_b_c"


# ---------------------------------------------------------------------------------------------------
# The shipped reference scores.


def test_shipped_reference_scores_cover_the_suites():
    data_file = Path(aggregate.__file__).parent / "reference_scores.json"
    raw = json.loads(data_file.read_text())["environments"]
    names = [name for suite in SUITES.values() for name in suite]
    assert sorted(raw) == sorted(names)
    for name, entry in raw.items():
        assert set(entry) >= {"random", "reference", "random_source", "reference_source"}, name
        assert entry["reference"] != entry["random"], name
        assert entry["reference"] > entry["random"], name  # every return here is "higher is better"
        assert entry["random_source"].strip() and entry["reference_source"].strip(), name
    loaded = aggregate.reference_scores()
    assert list(loaded) == list(raw)
    assert loaded["pgx:tic_tac_toe"].reference == 1.0


def test_board_game_random_score_is_the_symmetric_zero():
    # Random vs random, scored half the games from each seat: the expected result is 0.
    loaded = aggregate.reference_scores()
    assert loaded["pgx:tic_tac_toe"].random == 0.0
    assert loaded["pgx:connect_four"].random == 0.0


@pytest.mark.parametrize(
    "entry, match",
    [
        ({"random": 0.0, "reference": 1.0, "random_source": "x"}, "lacks"),
        ({"random": 1.0, "reference": 1.0, "random_source": "x", "reference_source": "y"}, "=="),
        (
            {"random": "0", "reference": 1.0, "random_source": "x", "reference_source": "y"},
            "finite",
        ),
        ({"random": 0.0, "reference": 1.0, "random_source": " ", "reference_source": "y"}, "empty"),
    ],
)
def test_reference_scores_file_errors(tmp_path, entry, match):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"environments": {"gymnax:CartPole-v1": entry}}))
    with pytest.raises(ValueError, match=match):
        aggregate.reference_scores(path)
