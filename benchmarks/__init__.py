"""Benchmark scripts of dp-marginals, run as modules from the repository root, e.g.
``python -m benchmarks.figure3 --quick``. Shared parts (data, seeds, grids, timing, processes,
result files, plots) live in `benchmarks.harness`."""
