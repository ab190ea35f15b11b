"""The lab: diagnostics of fastatari's internals, run from a checkout (not installed).

``python -m benchmarks --section NAME`` runs sections of the same shape as ``fastatari
bench``'s (:class:`fastatari.bench.harness.Section`), through the same harness, each one job:
``sections/`` (registered in ``sections/__init__.py``), ``load.py`` (other processes' load
meanwhile, the not-idle warning), ``stand_in.py`` (a game that does not emulate, for the
transport). Scripts beside them: ``barrier_bound.py``, ``cleanrl_sps.py``,
``evaluate_vs_gymnasium.py``, ``trainer_cpu.py``; ``test_bench_kernels.py`` (pytest-benchmark,
``pytest benchmarks/test_bench_kernels.py``). Their tests: ``benchmarks/tests/``.
"""
