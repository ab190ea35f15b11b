"""Benchmarks: kernel microbenchmarks (pytest-benchmark) and the throughput harness."""
