"""Reading what a suite run left behind: ``results.json``, each seed's returns, the exported copy.

``mz-jax suite`` writes ``<suite_workdir>/results.json`` (per environment: its workdir, whether it
finished, env steps, wall time, and per seed the final and best greedy-evaluation returns); each
environment's workdir holds the ``metrics.jsonl`` of its run, whose curves
:mod:`mz_jax.run.records` reads. :mod:`mz_jax.suite.report` turns both into the report;
:func:`export_finished` copies what the finished environments left behind, without checkpoints, to a
directory to commit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mz_jax.run.records import finite_number
from mz_jax.run.workdir import CONFIG_FILE, METRICS_FILE, RESULTS_FILE, write_atomically


def load_results(suite_workdir: str | Path) -> dict:
    """Reads ``results.json`` of a suite workdir and checks its layout.

    Args:
      suite_workdir: the directory ``mz-jax suite --workdir`` wrote.

    Returns:
      The parsed JSON: ``{"suite": ..., "environments": {name: {...}}, ...}``.

    Raises:
      FileNotFoundError: if there is no ``results.json``.
      ValueError: if it is not JSON or lacks an ``environments`` mapping.
    """
    path = Path(suite_workdir) / RESULTS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"no {RESULTS_FILE} in {str(suite_workdir)!r}: pass the --workdir of an `mz-jax suite` "
            "run."
        )
    try:
        results = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(results, dict) or not isinstance(results.get("environments"), dict):
        raise ValueError(f"{path} must hold an object with an 'environments' mapping.")
    for name, entry in results["environments"].items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: the entry of {name!r} must be an object, got {entry!r}.")
    return results


def final_returns(entry: dict) -> list[float]:
    """Finite final returns of an environment's seeds (a ``results.json`` entry), by seed."""
    seeds = entry.get("seeds") or []
    rows = [
        s for s in seeds if isinstance(s, dict) and finite_number(s.get("final_return")) is not None
    ]
    rows.sort(key=lambda s: s.get("seed", 0) if isinstance(s.get("seed"), int) else 0)
    return [float(s["final_return"]) for s in rows]


def best_returns(entry: dict) -> list[float]:
    """Finite best returns of an environment's seeds (a ``results.json`` entry)."""
    seeds = entry.get("seeds") or []
    return [
        float(s["best_return"])
        for s in seeds
        if isinstance(s, dict) and finite_number(s.get("best_return")) is not None
    ]


def export_finished(suite_workdir: str | Path, dest: str | Path) -> dict:
    """Copies what a suite's finished environments need, without their checkpoints, to ``dest``.

    That is ``results.json`` (its finished environments only) and each one's ``config.json`` and
    ``metrics.jsonl``: 2.1 MB for a MinAtar game whose workdir takes 120 MB, mostly checkpoints.
    From ``dest``, ``mz-jax report`` writes the finished environments' rows of the report
    (:func:`mz_jax.suite.report.write_report`) as the suite workdir gives them, and a copy of ``dest``
    resumes the suite on another machine: ``mz-jax suite`` with the same arguments reports the
    finished environments and trains only the others. An unfinished one is left out, since it
    would start over without its checkpoint.

    Returns:
      The ``results.json`` written to ``dest``.

    Raises:
      FileNotFoundError: no ``results.json`` in ``suite_workdir``, or a finished environment's
        ``config.json`` is missing.
      ValueError: ``dest`` is ``suite_workdir``, or ``results.json`` is malformed.
    """
    suite_workdir, dest = Path(suite_workdir), Path(dest)
    if dest.resolve() == suite_workdir.resolve():
        raise ValueError(
            f"cannot export {str(suite_workdir)!r} into itself: name another directory"
        )
    results = load_results(suite_workdir)
    finished = {
        name: record
        for name, record in results["environments"].items()
        if record.get("done") is True and isinstance(record.get("workdir"), str)
    }
    for record in finished.values():
        source = suite_workdir / record["workdir"]
        if not (source / CONFIG_FILE).is_file():
            raise FileNotFoundError(
                f"{source / CONFIG_FILE} is missing: a finished environment cannot be exported "
                "without the configuration it was trained with"
            )
    for record in finished.values():
        source, target = suite_workdir / record["workdir"], dest / record["workdir"]
        target.mkdir(parents=True, exist_ok=True)
        for name in (CONFIG_FILE, METRICS_FILE):
            if (source / name).is_file():
                shutil.copyfile(source / name, target / name)
    exported = {**results, "environments": finished}
    dest.mkdir(parents=True, exist_ok=True)
    write_atomically(dest / RESULTS_FILE, json.dumps(exported, indent=2) + "\n")
    return exported
