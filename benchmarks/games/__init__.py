"""The board and chance games on an accelerator: ``lease.py`` trains and measures them in a GPU
lease (``python benchmarks/games/lease.py``), and this folder keeps what it measured:
``results.json`` and the exported ``connect_four_agent/``.

Run as a script, ``lease.py`` finds ``benchmarks/common.py`` and ``benchmarks/gpu.py`` through the
one ``sys.path`` line at its top; imported (by the tests) it is ``games.lease`` with
``benchmarks/`` on the path.
"""
