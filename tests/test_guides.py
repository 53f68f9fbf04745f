"""The guides run: every script of examples/ and every ```python block of docs/*.md.

Each runs in its own Python process from the repository root (so an environment registered or a
device count set by one cannot leak into another, or into this test process), at the small sizes
the scripts offer for CI. The checks read what the scripts print. A ```python block preceded by the
line ``<!-- skip -->`` is not run; the blocks of one page run in order as one program, like a
notebook. A block preceded by ``<!-- after the set-up command -->`` (the README's trained agent)
runs on its own, in a folder where that command's run has been made.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = sorted((REPO / "docs").glob("*.md"))
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
TUNING = REPO / "benchmarks" / "tuning"  # one record per preset, and README.md, their index
TRAIN_CONFIG = REPO / "mz_jax" / "config" / "train.py"
TIMEOUT_S = 600  # compile-bound, on two shared cores


def run_python(*args: str, timeout: float = TIMEOUT_S, cwd: Path = REPO) -> str:
    """Runs ``python *args`` in ``cwd`` (the repository root); returns its stdout, failing with the
    output."""
    result = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        pytest.fail(
            f"python {' '.join(args)} exited with {result.returncode}\n--- stdout ---\n"
            f"{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}"
        )
    return result.stdout


AFTER_SET_UP = "<!-- after the set-up command -->"


def python_blocks(markdown: str, *, mark: str | None = None) -> list[str]:
    """The ```python blocks of a page, in order, that the line ``mark`` comes right before (None:
    no ``<!-- ... -->`` line)."""
    blocks = []
    for match in re.finditer(
        r"(?P<before>[^\n]*\n)?```python\n(?P<code>.*?)^```", markdown, re.M | re.S
    ):
        before = (match.group("before") or "").strip()
        if (before if before.startswith("<!--") else None) == mark:
            blocks.append(match.group("code"))
    return blocks


# ---------------------------------------------------------------------------------------------------
# The pages.


def test_python_blocks_are_found_and_skip_marks_respected():
    page = (
        "intro\n```python\na = 1\n```\n<!-- skip -->\n```python\nraise SystemExit(1)\n```\n"
        "```\nnot python\n```\n```python\nb = a + 1\n```\n"
    )
    assert python_blocks(page) == ["a = 1\n", "b = a + 1\n"]
    page += f"{AFTER_SET_UP}\n```python\nc = 3\n```\n"
    assert python_blocks(page) == ["a = 1\n", "b = a + 1\n"]
    assert python_blocks(page, mark=AFTER_SET_UP) == ["c = 3\n"]


PAGES_WITH_CODE = [page for page in DOCS if python_blocks(page.read_text())]


def test_every_guide_but_the_index_has_code():
    assert {page.name for page in DOCS} - {page.name for page in PAGES_WITH_CODE} == {"index.md"}


# The README's library example runs too: it is the first code a user copies.
@pytest.mark.parametrize("page", [*PAGES_WITH_CODE, REPO / "README.md"], ids=lambda p: p.name)
def test_doc_python_blocks_run(page, tmp_path):
    program = tmp_path / f"{page.stem}.py"
    program.write_text("\n".join(python_blocks(page.read_text())))
    run_python(str(program))


def test_readme_agent_example_runs_on_the_run_of_the_set_up_command(tmp_path):
    readme = (REPO / "README.md").read_text()
    set_up = "mz-jax train --config cartpole --workdir runs/cartpole"
    assert set_up in readme  # the run the example restores
    (example,) = python_blocks(readme, mark=AFTER_SET_UP)
    # That run, stopped after its first iteration: the example needs a checkpoint, not a good agent.
    first_iteration = ["--total-env-steps", "1", "--eval-every-env-steps", "0"]
    run_python("-m", "mz_jax.cli.main", *set_up.split()[1:], *first_iteration, cwd=tmp_path)
    (tmp_path / "example.py").write_text(example)
    out = run_python("example.py", cwd=tmp_path)
    assert out.strip(), "the example printed nothing"


def test_index_lists_every_guide():
    index = (REPO / "docs" / "index.md").read_text()
    for page in DOCS:
        if page.name != "index.md":
            assert f"({page.name})" in index, f"docs/index.md does not link {page.name}"


def test_paths_named_in_the_docs_exist():
    # The guides, the README, the tuning records and the presets' docstrings, which point at them.
    presets = sorted((REPO / "mz_jax" / "config" / "presets").glob("*.py"))
    named = set()
    for page in [*DOCS, REPO / "README.md", *sorted(TUNING.glob("*.md")), *presets]:
        named |= set(
            re.findall(
                r"\b((?:examples|tests|benchmarks|docs|mz_jax)/[\w./-]+\.\w+)", page.read_text()
            )
        )
    assert named, "expected the guides to name example and test files"
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, f"the docs and presets name files that do not exist: {missing}"


def test_links_to_results_name_a_section_of_results_md():
    # README.md, the guides, the tuning records and the presets link results as RESULTS.md#<name>.
    pages = [REPO / "README.md", *DOCS, *sorted(TUNING.glob("*.md"))]
    pages += sorted((REPO / "mz_jax" / "config" / "presets").glob("*.py"))
    linked = {
        name for page in pages for name in re.findall(r"RESULTS\.md#([\w-]+)", page.read_text())
    }
    sections = set(
        re.findall(r"^## (\S+)$", (REPO / "benchmarks" / "RESULTS.md").read_text(), re.M)
    )
    assert linked, "expected links to benchmarks/RESULTS.md sections"
    assert linked <= sections, f"no section of benchmarks/RESULTS.md for {linked - sections}"


def test_every_tuning_record_is_listed_and_named_by_its_preset():
    index = (TUNING / "README.md").read_text()
    # A record that is not one preset's is listed under this heading, and named by a preset or
    # by TrainConfig.
    beyond_one_preset = index.partition("\n## Beyond one preset\n")[2]
    presets = sorted((REPO / "mz_jax" / "config" / "presets").glob("*.py"))
    for record in sorted(TUNING.glob("*.md")):
        if record.name == "README.md":
            continue
        assert f"]({record.name})" in index, (
            f"benchmarks/tuning/README.md does not link {record.name}"
        )
        if f"]({record.name})" in beyond_one_preset:
            naming = [
                p
                for p in [*presets, TRAIN_CONFIG]
                if f"benchmarks/tuning/{record.name}" in p.read_text()
            ]
            assert naming, f"no preset names benchmarks/tuning/{record.name}"
            continue
        preset = REPO / "mz_jax" / "config" / "presets" / f"{record.stem}.py"
        assert f"benchmarks/tuning/{record.name}" in preset.read_text(), preset


# ---------------------------------------------------------------------------------------------------
# The registration hook the custom-environment guide relies on (mz_jax.envs.register_env).


def test_register_env_passes_arguments_and_checks_what_it_gets(monkeypatch):
    from mz_jax import envs

    monkeypatch.setattr(envs, "_REGISTERED", {})  # nothing leaks into other tests
    # Listing the built-in names constructs every gymnax environment; two stand in for them here.
    monkeypatch.setattr(envs, "_supported_names", lambda: ("gymnax:CartPole-v1", "pgx:go_9x9"))
    calls = []

    def factory(*, max_episode_steps=None, **kwargs):
        calls.append((max_episode_steps, kwargs))
        return envs.Env(
            name="custom:dummy",
            num_actions=2,
            observation_shape=(3,),
            num_players=1,
            max_episode_steps=max_episode_steps,
            reset=lambda key: None,
            step=lambda key, state, action: None,
        )

    envs.register_env("custom:dummy", factory)
    env = envs.make_env("custom:dummy", max_episode_steps=7, size=3)
    assert calls == [(7, {"size": 3})] and env.max_episode_steps == 7
    assert envs.list_envs() == ["gymnax:CartPole-v1", "pgx:go_9x9", "custom:dummy"]

    with pytest.raises(ValueError, match="register_env") as error:
        envs.make_env("custom:dumy")
    assert "'custom:dummy'" in str(error.value)  # offered as a close match
    for bad_name in ("gymnax:mine", "pgx:mine", "toy:mine", "", 3):
        with pytest.raises(ValueError, match="must be a non-empty str"):
            envs.register_env(bad_name, factory)
    with pytest.raises(ValueError, match="callable"):
        envs.register_env("custom:x", "not a function")
    envs.register_env("custom:wrong", lambda **kwargs: "not an Env")
    with pytest.raises(ValueError, match="returned str, not an Env"):
        envs.make_env("custom:wrong")


# ---------------------------------------------------------------------------------------------------
# The examples: each one has a test below, with checks of what it prints.

TESTED_EXAMPLES = {
    "scale_gradient_demo.py",
    "custom_network.py",
    "custom_environment.py",
    "own_training_loop.py",
}


def test_every_example_is_tested():
    assert {p.name for p in EXAMPLES} == TESTED_EXAMPLES


def test_slurm_script_parses():
    # Not run (it needs a cluster); bash -n checks its syntax only.
    subprocess.run(["bash", "-n", str(REPO / "examples" / "slurm_launch.sh")], check=True)


def gradient_tables(output: str) -> dict[tuple[str, str], dict[int, dict[str, float]]]:
    """``{(network, part): {K: {variant: norm, "loss value": loss}}}`` from the demo's output."""
    tables = {}
    for match in re.finditer(
        r"^(?P<network>.+): gradient norm reaching the (?P<part>\w+) function's parameters\n"
        r"(?P<header>.+)\n(?P<rows>(?:\s+\d+(?:\s+[\d.]+)+\n)+)",
        output,
        re.M,
    ):
        columns = re.split(r"\s{2,}", match.group("header").strip())
        rows = {}
        for line in match.group("rows").splitlines():
            k, *values = line.split()
            rows[int(k)] = dict(zip(columns[1:], map(float, values), strict=True))
        tables[match.group("network"), match.group("part")] = rows
    return tables


def test_scale_gradient_demo():
    output = run_python("examples/scale_gradient_demo.py", "--quick")
    tables = gradient_tables(output)
    dynamics = tables["residual network (plain jax.numpy)", "dynamics"]
    representation = tables["residual network (plain jax.numpy)", "representation"]
    assert sorted(dynamics) == [1, 4, 8]
    # K = 1: no later step, so the four losses have the same gradient.
    assert len({dynamics[1][v] for v in dynamics[1] if v != "loss value"}) == 1
    # Without the scalings the dynamics gradient grows with K; with both it stays near K = 1's.
    assert dynamics[8]["neither"] > 8 * dynamics[1]["neither"]
    assert dynamics[8]["both (MuZero)"] < 1.25 * dynamics[1]["both (MuZero)"]
    # Neither scaling alone suffices here: 1/2 leaves K step losses adding up, 1/K leaves the
    # gradient through the chain of dynamics steps growing.
    assert dynamics[8]["1/2 only"] > 4 * dynamics[1]["1/2 only"]
    assert dynamics[8]["1/K only"] > 1.5 * dynamics[8]["both (MuZero)"]
    # The 1/2 bounds what flows back through the chain into the representation function.
    assert representation[8]["neither"] > 3 * representation[8]["1/2 only"]
    # The script asserts these (bit-equal loss values, make_loss_fn's gradient) before printing.
    assert "the loss value is identical (bit for bit) in all four variants" in output
    assert "make_loss_fn gives the loss and gradients of 'both (MuZero)'" in output


def test_custom_network():
    output = run_python("examples/custom_network.py")
    for name in ("flax nnx", "jax.numpy"):
        line = re.search(rf"^\s*{re.escape(name)}: loss (\S+) .*gradient norm (\S+),", output, re.M)
        assert line, output
        loss, grad_norm = float(line.group(1)), float(line.group(2))
        assert math.isfinite(loss) and loss > 0 and grad_norm > 0


def test_custom_environment(tmp_path):
    workdir = tmp_path / "corridor"
    output = run_python("examples/custom_environment.py", "--quick", "--workdir", str(workdir))
    assert "custom:corridor: 2 actions, observation (8,), time limit 16" in output
    assert "legal [False  True]" in output  # left is illegal in cell 0
    assert (
        "after 7 moves right: reward 1.0, terminated True, truncated False, final cell 7, "
        "next episode's cell 0" in output
    )
    evals = [
        (int(updates), float(value))
        for updates, value in re.findall(r"\(\s*(\d+) updates\): eval return (\S+)$", output, re.M)
    ]
    assert evals and evals[0][0] == 0, output  # the first evaluation is of the untrained network
    assert evals[0][1] == 0.0, output  # it shuttles between cells 0 and 1
    # The fast learning test: from shuttling (0) to walking straight to the goal (1) in 1,024 steps.
    assert evals[-1][0] > 0 and evals[-1][1] >= 0.9, output
    assert (workdir / "metrics.jsonl").exists() and (workdir / "checkpoints").is_dir()


def test_own_training_loop():
    output = run_python("examples/own_training_loop.py", "--steps", "60", "--cpu-devices", "2")
    assert re.search(r"^devices: 2 x cpu; batch 64 split 32 per device", output, re.M), output
    losses = {
        who: (float(first), float(last))
        for who, first, last in re.findall(
            r"^(one device|\d devices):\s+loss (\S+) \(first 10 updates\) -> (\S+) \(last 10\)",
            output,
            re.M,
        )
    }
    assert set(losses) == {"one device", "2 devices"}, output
    first, last = losses["one device"]
    assert last < 0.7 * first
    assert losses["2 devices"] == pytest.approx(losses["one device"], rel=1e-3)
    gap = float(re.search(r"largest parameter difference after 60 updates: (\S+)", output).group(1))
    assert gap < 1e-4
