"""One-off investigations: the measurements behind a decision (what a loss term costs, how often
exploration reaches a goal, the random policy's scores), each a script run from the repository
root as ``python benchmarks/investigations/<name>.py``.

Run as a script, a file here finds ``benchmarks/common.py`` and the other scripts through the one
``sys.path`` line at its top; imported (by the tests, or by a script in another folder) it is
``investigations.<name>`` with ``benchmarks/`` on the path.
"""
