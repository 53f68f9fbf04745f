"""The package's layers: each subpackage imports only the layers below it (mz_jax/__init__.py)."""

import ast
from pathlib import Path

import mz_jax

PACKAGE = Path(mz_jax.__file__).parent
# Bottom to top; a module may import its own layer and those listed before it, and networks and
# envs, side by side, may not import each other.
LAYERS = [
    "types",
    "core",
    "networks",
    "envs",
    "config",
    "mcts",
    "training",
    "run",
    "suite",
    "show",
    "cli",
]
SIDE_BY_SIDE = {"networks": "envs", "envs": "networks"}


def _imports(path: Path) -> set[str]:
    """The first component below ``mz_jax`` of every mz_jax module ``path`` imports, anywhere."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mz_jax"):
            parts = node.module.split(".")
            if len(parts) > 1:
                found.add(parts[1])
            else:
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "mz_jax" and len(parts) > 1:
                    found.add(parts[1])
    return found


def test_every_module_belongs_to_a_layer():
    top = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()}
    top -= {"__init__", "__pycache__"}
    assert top == set(LAYERS), "a new top-level module or subpackage needs a place in LAYERS"


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts == ("__init__",):
            continue  # the package's front door re-exports every layer
        layer = parts[0]
        rank = LAYERS.index(layer)
        for imported in _imports(path):
            if imported not in LAYERS:
                continue
            if LAYERS.index(imported) > rank or SIDE_BY_SIDE.get(layer) == imported:
                upward.append(f"{path.relative_to(PACKAGE)} imports mz_jax.{imported}")
    assert not upward, upward


def test_the_check_finds_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from mz_jax.run.loop import run_training\nimport mz_jax.cli.main\n")
    assert _imports(module) == {"run", "cli"}
