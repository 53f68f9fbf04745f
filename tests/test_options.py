"""The configuration's fields (one line of help each, Literal choices, docs/options.md) and presets."""

import ast
import dataclasses
import inspect
import itertools
import statistics
import typing
from pathlib import Path

from mz_jax.config import NetworkConfig, SearchConfig, StochasticConfig, TrainConfig

OPTIONS = Path(__file__).resolve().parents[1] / "docs" / "options.md"
PARTS = {"network": NetworkConfig, "search": SearchConfig, "stochastic": StochasticConfig}
FREE_TEXT = {"env"}  # a name from an open registry, not a fixed choice


def _help(cls: type) -> dict[str, str]:
    """Each field's attribute docstring (what ``--help`` shows), whitespace collapsed."""
    body = ast.parse(inspect.getsource(cls)).body[0].body
    found = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr):
            if isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                found[node.target.id] = " ".join(after.value.value.split())
    return found


def _fields() -> dict[str, tuple[type, str]]:
    """Dotted name -> (the class that holds the field, its name there), nested parts expanded."""
    fields = {}
    for field in dataclasses.fields(TrainConfig):
        if field.name in PARTS:
            for inner in dataclasses.fields(PARTS[field.name]):
                fields[f"{field.name}.{inner.name}"] = (PARTS[field.name], inner.name)
        else:
            fields[field.name] = (TrainConfig, field.name)
    return fields


def test_every_field_has_one_line_of_help():
    lengths = []
    for cls in (TrainConfig, *PARTS.values()):
        help_of = _help(cls)
        for field in dataclasses.fields(cls):
            text = help_of.get(field.name, "")
            assert text, f"{cls.__name__}.{field.name} has no help"
            assert len(text) <= 200, f"{cls.__name__}.{field.name}: {len(text)} characters"
            lengths.append(len(text))
    assert statistics.median(lengths) <= 160


def test_every_field_is_in_docs_options():
    text = OPTIONS.read_text()
    missing = [name for name in _fields() if f"- `{name}` = " not in text]
    missing += [f"## {part}" for part in PARTS if f"\n## {part}\n" not in text]
    assert not missing, f"docs/options.md does not describe {missing}"


def test_fixed_choices_are_literals():
    plain = []
    for cls in (TrainConfig, *PARTS.values()):
        for name, hint in typing.get_type_hints(cls).items():
            if hint is str and name not in FREE_TEXT:
                plain.append(f"{cls.__name__}.{name}")
    assert not plain, f"fixed choices typed str rather than Literal: {plain}"


def test_help_is_read_from_the_source():
    # The reader above sees what tyro sees: a field's docstring, not the class docstring.
    assert _help(SearchConfig)["num_simulations"] == "Simulations per search."


def test_preset_docstrings_are_short_and_name_their_records():
    from mz_jax.config import presets

    for name in presets.list_presets():
        source = presets.find_preset(name).read_text()
        docstring = ast.get_docstring(ast.parse(source))
        assert docstring and len(docstring.splitlines()) <= 15, name
        # Where its results are: its section of RESULTS.md, or for a preset made for accelerators
        # and not yet measured on a CPU, the GPU report.
        text = " ".join(docstring.split())
        assert (
            f"benchmarks/RESULTS.md#{name}" in text or "Results: benchmarks/RESULTS-gpu.md." in text
        ), name
