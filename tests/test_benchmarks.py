"""Every script under ``benchmarks/`` (found by glob, so a new one is covered) imports, and answers
``--help`` with its description, run as a script from the repository root."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
HELPERS = {"common.py", "__init__.py"}
SCRIPTS = sorted(p for p in BENCHMARKS.rglob("*.py") if p.name not in HELPERS)

sys.path.insert(0, str(BENCHMARKS))

# Runs every script given as ``python <script> --help`` would, in one process: importing jax once
# instead of once a script keeps the test to seconds.
HELP_RUNNER = """
import contextlib, io, json, runpy, sys
from pathlib import Path

answers = {}
for path in sys.argv[1:]:
    folder = str(Path(path).parent)
    sys.argv = [path, "--help"]
    sys.path.insert(0, folder)  # as `python <script>` puts the script's folder first
    out = io.StringIO()
    code = "returned without exiting"
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exit:
            code = exit.code
        except Exception as error:
            code = f"raised {error!r}"
    sys.path.remove(folder)
    answers[path] = [code, out.getvalue()]
print(json.dumps(answers))
"""


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(BENCHMARKS).with_suffix("").parts)


def first_paragraph(path: Path) -> str:
    """The module docstring's first paragraph, whitespace collapsed (argparse rewraps it)."""
    module = importlib.import_module(module_name(path))
    return " ".join(module.__doc__.split("\n\n")[0].split())


def test_the_glob_finds_the_scripts_and_the_top_level_stays_small():
    names = {str(p.relative_to(BENCHMARKS)) for p in SCRIPTS}
    assert {"run_all.py", "results.py", "diagnostics/tactics.py"} <= names
    assert {"investigations/loss_unroll.py"} <= names
    assert len(list(BENCHMARKS.glob("*.py"))) <= 10


@pytest.mark.parametrize("path", SCRIPTS, ids=module_name)
def test_every_script_imports(path):
    module = importlib.import_module(module_name(path))
    assert callable(module.main)


def test_every_script_answers_help_with_its_description():
    relative = [str(p.relative_to(ROOT)) for p in SCRIPTS]
    done = subprocess.run(
        [sys.executable, "-c", HELP_RUNNER, *relative],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.splitlines()[-1])
    failures = []
    for path, name in zip(SCRIPTS, relative, strict=True):
        code, text = answers[name]
        flat = " ".join(text.split())
        if code != 0 or not text.startswith("usage: "):
            failures.append(f"{name}: exit {code!r}, output {text[:200]!r}")
        elif first_paragraph(path) not in flat:
            failures.append(f"{name}: --help lacks the docstring's first paragraph")
    assert not failures, "\n".join(failures)
