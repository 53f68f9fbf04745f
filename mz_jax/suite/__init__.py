"""Benchmark suites: several environments times several seeds, games against opponents, the results
file, aggregate scores with confidence intervals, plots and the markdown report.
"""
