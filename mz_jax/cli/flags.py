"""The configuration flags of ``mz-jax train``: tyro parses them, and what it refuses ends in our line.

tyro turns every field of :class:`mz_jax.TrainConfig` into a flag. It reports a value it refuses
(one that does not parse, is not among a field's choices, or that the configuration's own checks
reject) in a box of several lines; :func:`parse_config` hands each such refusal to the caller as
one :class:`mz_jax.cli.errors.CliError` instead, so that every failure of ``mz-jax`` reads
``mz-jax train: error: ...`` and exits with status 2.

It does so through tyro's parse-error hook, which tyro keeps in a private module
(``tyro._errors``): ``pyproject.toml`` bounds tyro's version to the releases it was tested with.
"""

from __future__ import annotations

from collections.abc import Sequence

from mz_jax.cli.errors import PROG, CliError
from mz_jax.config.train import TrainConfig


def parse_config(args: Sequence[str], *, default: TrainConfig, description: str) -> TrainConfig:
    """The :class:`TrainConfig` of ``args`` (flags of its fields, ``--num-envs 32``), ``default``
    supplying the values of fields not given; ``--help`` prints tyro's help and exits.

    Raises:
      CliError: with status 2 and a one-line message naming the flag or field, for whatever tyro
        refuses (an unknown flag, a value that does not parse or is not allowed).
    """
    import tyro
    from tyro import _errors

    with _errors.on_parse_error(_raise_one_line):
        return tyro.cli(
            TrainConfig,
            default=default,
            args=list(args),
            prog=f"{PROG} train",
            description=description,
        )


def _flag(argument) -> str:
    """An argument's flags (``--network.kind``), or its name if it has none."""
    names = getattr(getattr(argument, "lowered", None), "name_or_flags", None)
    return "/".join(names) if names else str(argument)


def _raise_one_line(event) -> None:
    """tyro's parse-error hook: raises the :class:`CliError` of ``event``."""
    from tyro import _errors

    help_hint = f"(`{PROG} train --help` lists the flags)"
    if isinstance(event, _errors.InstantiationFailure):
        # A field's own check ("config field 'discount' = 1.5 is invalid: allowed ...") names it.
        if event.argument is None:
            raise CliError(event.message)
        raise CliError(f"{_flag(event.argument)}: {event.message}")
    if isinstance(event, _errors.InvalidChoice):
        raise CliError(
            f"{_flag(event.argument)} {event.value!r} is invalid: allowed one of "
            f"{', '.join(event.choices)}"
        )
    if isinstance(event, _errors.UnrecognizedArgs):
        raise CliError(f"unrecognized arguments: {' '.join(event.tokens)} {help_hint}")
    if isinstance(event, _errors.BadValue):
        if event.offending_value is not None:
            raise CliError(f"{_flag(event.argument)} takes no value, got {event.offending_value!r}")
        raise CliError(f"{_flag(event.argument)}: too few values")
    if isinstance(event, _errors.MissingArgs):
        missing = ", ".join(_flag(item.arg) for item in event.missing_arguments)
        raise CliError(f"missing {missing} {help_hint}")
    raise CliError(f"the arguments were refused ({type(event).__name__}) {help_hint}")
