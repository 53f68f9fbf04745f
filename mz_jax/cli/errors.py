"""How ``mz-jax`` fails: its exit statuses, its one-line errors, and ``errors.log``.

Every failure of a command ends in one line on stderr, ``mz-jax COMMAND: error: ...``, naming what
failed (the flag or field, the file, the checkpoint), and in an exit status that says what kind of
failure it was (the table of docs/running.md):

====  ===================================================================================
0     done: a finished run (``train``), or the command's work (``eval``, ``envs``, ...)
1     the run failed: training stopped on non-finite values, no checkpoint of the workdir
      can be restored, or an unexpected error (a bug: its traceback is in errors.log)
2     bad input: an unknown flag, preset or environment, an invalid field value, a preset
      file that does not load, a configuration that differs from the workdir's, a workdir
      that is a file, an ``eval`` of a folder with no run or no checkpoint yet
74    an I/O failure: a checkpoint, metrics.jsonl or another file could not be written (a
      full disk); the newest complete checkpoint is intact
75    stopped by SIGTERM/SIGINT after saving: run the same command again to resume
130   stopped at once (a second signal, or Ctrl-C before training started); the newest
      complete checkpoint is intact
141   the reader of the output went away (``mz-jax train --help | head``): stopped quietly
====  ===================================================================================

:class:`CliError` carries a message and its status to :func:`mz_jax.cli.main.main`, which hands it (or a
``KeyboardInterrupt``, or a ``BrokenPipeError``) to :func:`exit_with`. A failed ``train`` is turned
into its :class:`CliError` by :func:`train_error`, which appends the traceback (and the checkpoint
library's log records, kept off stderr by :class:`LibraryLogs`) to ``errors.log`` in the workdir.
Nothing here imports :mod:`mz_jax.cli.main` (it imports this module).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import NoReturn

PROG = "mz-jax"

EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2  # argparse's and tyro's status for a usage error
EXIT_IO_ERROR = 74  # sysexits.h EX_IOERR
EXIT_STOPPED = 75  # sysexits.h EX_TEMPFAIL: "the user is invited to retry"
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as for any Unix tool whose reader went away


class CliError(Exception):
    """A problem the user can fix (bad flag, missing checkpoint); printed without a traceback.

    Args:
      message: what is wrong, naming the flag or field, the value and what is allowed.
      status: the exit status (``EXIT_*``): bad input by default.
    """

    def __init__(self, message: str, *, status: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.status = status


def train_error(
    error: Exception, workdir: Path, argv: list[str], records: list[logging.LogRecord]
) -> CliError:
    """The one-line :class:`CliError` of a failed run, its traceback (and the checkpoint library's
    log records) appended to ``errors.log`` in the workdir for all but bad input."""
    from mz_jax.run.checkpoint import CheckpointError, short_reason
    from mz_jax.run.loop import NonFiniteError
    from mz_jax.run.workdir import append_error_log

    if isinstance(error, ValueError):  # the configuration, the environment, the devices
        return CliError(str(error), status=EXIT_BAD_INPUT)
    if isinstance(error, OSError):
        message, status = str(error), EXIT_IO_ERROR
    elif isinstance(error, NonFiniteError | CheckpointError):
        message, status = f"training stopped: {error}", EXIT_FAILED
    else:
        message, status = f"unexpected {short_reason(error)} (please report it)", EXIT_FAILED
    formatter = logging.Formatter("%(levelname)s %(name)s %(pathname)s:%(lineno)d: %(message)s")
    log = append_error_log(
        workdir,
        f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {PROG} train {' '.join(argv)}\n"
        + "".join(traceback.format_exception(error))
        + "".join(formatter.format(record) + "\n" for record in records),
    )
    where = f"traceback in {log}" if log else "--debug for the traceback"
    return CliError(f"{message} ({where})", status=status)


class LibraryLogs(logging.Filter):
    """Keeps orbax's error records (with their tracebacks) off stderr while ``train`` runs: every
    failure they describe reaches the user as this command's one-line error, and they go to
    ``errors.log`` with its traceback (``records``). ``capture=False`` (``--debug``) leaves them.
    """

    def __init__(self, *, capture: bool):
        super().__init__()
        self.capture = capture
        self.records: list[logging.LogRecord] = []
        self._logger = logging.getLogger("absl")  # orbax logs through absl

    def filter(self, record: logging.LogRecord) -> bool:
        from_orbax = f"{os.sep}orbax{os.sep}" in record.pathname
        if from_orbax and (record.levelno >= logging.ERROR or record.exc_info):
            self.records.append(record)
            return False
        return True

    def __enter__(self) -> LibraryLogs:
        if self.capture:
            self._logger.addFilter(self)
        return self

    def __exit__(self, *exc_info) -> None:
        self._logger.removeFilter(self)


def exit_with(
    error: CliError | KeyboardInterrupt | BrokenPipeError, command: str | None, *, debug: bool
) -> NoReturn:
    """Ends the command that raised ``error`` (called from its ``except`` clause): prints its one
    line to stderr (a traceback too with ``debug``) and raises ``SystemExit`` with its status."""
    if isinstance(error, CliError):
        if debug and error.__cause__ is not None:
            traceback.print_exception(error.__cause__)
        print(f"{PROG} {command}: error: {one_line(str(error))}", file=sys.stderr)
        raise SystemExit(error.status) from None
    if isinstance(error, KeyboardInterrupt):
        if debug:
            traceback.print_exc()
        reason = f" ({error})" if str(error) else ""
        resume = (
            "; the newest complete checkpoint (if any) is intact: run the same command again to "
            "resume from it"
            if command in ("train", "suite")
            else ""
        )
        print(f"{PROG} {command or ''}: interrupted{reason}{resume}", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    silence_stdout()  # a BrokenPipeError: the reader of the output went away
    raise SystemExit(EXIT_BROKEN_PIPE) from None


def one_line(message: str) -> str:
    """``message`` on one line (a library's message may hold line breaks)."""
    return " ".join(line.strip() for line in message.splitlines() if line.strip())


def silence_stdout() -> None:
    """Points stdout at /dev/null: its reader went away (``| head``), and Python's flush of stdout
    at exit would otherwise fail again, with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (a test's captured stdout)
        pass
