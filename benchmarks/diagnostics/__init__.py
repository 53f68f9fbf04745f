"""Diagnostics of a trained run: questions asked of a workdir's networks (their values, moves and
chance codes), each a script run from the repository root as
``python benchmarks/diagnostics/<name>.py``.

Run as a script, a file here finds ``benchmarks/common.py`` and the other scripts through the one
``sys.path`` line at its top; imported (by the tests, or by a script in another folder) it is
``diagnostics.<name>`` with ``benchmarks/`` on the path.
"""
