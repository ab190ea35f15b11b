"""fastatari's tests, folder for folder as the package (tests/vector for fastatari.vector).

A package so that its modules import their helpers relatively (``from .._processes import
alive``): pytest runs with ``--import-mode=importlib`` and never puts tests/ on sys.path.
"""
