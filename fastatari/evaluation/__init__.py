"""Scoring agents the way papers do.

The submodules: ``evaluate`` (:func:`fastatari.evaluate`: a policy run on a suite under a named
protocol, per-game returns and their human-normalized aggregates; ``fastatari evaluate``),
``scores`` (human-normalized scores from published reference tables, and aggregates with
bootstrap intervals) and ``suites`` (the named game lists), also reached as
:func:`fastatari.evaluate`, ``fastatari.scores`` and ``fastatari.suites``.

Importing this package imports none of its submodules: each loads on first use.
"""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, ["evaluate", "scores", "suites"])
