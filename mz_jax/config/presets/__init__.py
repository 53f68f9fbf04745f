"""Presets: small modules of this package whose ``config()`` returns a :class:`~mz_jax.TrainConfig`.

A preset is named by its module (``--config cartpole`` is ``mz_jax/config/presets/cartpole.py``,
shipped with the package), or given as a path to a ``.py`` file of one's own that defines
``config()``. ``mz-jax train --config``, ``mz-jax suite`` and the benchmarks load them here; a preset
may start from another (``cartpole_sample_efficient`` starts from ``cartpole``).
"""

from __future__ import annotations

import importlib.util
import re
import traceback
from pathlib import Path

from mz_jax.config.train import TrainConfig

PRESET_DIR = Path(__file__).resolve().parent
"""Where the shipped presets are: this package's directory."""


class PresetError(ValueError):
    """An unknown preset, a file without ``config()``, or a ``config()`` that fails or returns
    another type; the message names the preset (as ``--config NAME``) and what is wrong."""


def list_presets() -> list[str]:
    """The names of the shipped presets, sorted."""
    return sorted(path.stem for path in PRESET_DIR.glob("*.py") if not path.name.startswith("_"))


def find_preset(name: str) -> Path:
    """The file of preset ``name``: a path to a ``.py`` file, or the name of a shipped preset.

    Raises:
      PresetError: if there is no such file; the message lists the shipped presets.
    """
    looks_like_path = name.endswith(".py") or "/" in name or "\\" in name
    if looks_like_path:
        path = Path(name).expanduser()
        if path.is_file():
            return path
        raise PresetError(f"--config {name!r}: no such file")
    path = PRESET_DIR / f"{name.replace('-', '_')}.py"
    if path.is_file() and not path.name.startswith("_"):
        return path
    raise PresetError(
        f"--config {name!r}: unknown preset; available presets: {', '.join(list_presets())}; "
        "or give a path to a .py file defining config()"
    )


def load_preset(name: str) -> TrainConfig:
    """The :class:`TrainConfig` returned by the ``config()`` function of preset ``name``.

    Raises:
      PresetError: for an unknown preset, a file that does not load (a syntax error, or an error
        raised while it runs: named with the file and line), a file without ``config()``, an
        invalid field value in it, or one returning another type.
    """
    path = find_preset(name)
    module_name = "mz_jax_preset_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except PresetError:
        raise  # a preset built on another that failed: that one's message says it all
    except SyntaxError as error:  # (IndentationError included)
        raise PresetError(
            f"--config {name!r}: {error.filename or path}, line {error.lineno}: "
            f"{type(error).__name__}: {error.msg}"
        ) from error
    except ValueError as error:  # an invalid field value in the preset itself
        raise PresetError(f"--config {name!r} ({path}): {error}") from error
    except Exception as error:
        raise _raised_in(name, path, error, "loading it") from error
    make_config = getattr(module, "config", None)
    if not callable(make_config):
        raise PresetError(f"--config {name!r}: {path} defines no function config() -> TrainConfig")
    try:
        config = make_config()
    except PresetError:
        raise
    except ValueError as error:
        raise PresetError(f"--config {name!r} ({path}): {error}") from error
    except Exception as error:
        raise _raised_in(name, path, error, "its config()") from error
    if not isinstance(config, TrainConfig):
        raise PresetError(
            f"--config {name!r}: config() in {path} returned {type(config).__name__}, "
            "not a TrainConfig"
        )
    return config


def _raised_in(name: str, path: Path, error: Exception, what: str) -> PresetError:
    """A :class:`PresetError` for ``error``, raised by ``what`` of the preset file ``path``, naming
    the line of that file it came from."""
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if Path(frame.filename).resolve() == path.resolve()
    ]
    at = f", line {lines[-1]}" if lines else ""
    return PresetError(
        f"--config {name!r}: {path}{at}: {what} raised {type(error).__name__}: {error}"
    )
