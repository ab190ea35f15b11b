"""Scoring agents the way papers do.

The submodules: ``evaluate`` (:func:`fastatari.evaluate`: a policy run on a suite under a named
protocol, per-game returns and their human-normalized aggregates; ``fastatari evaluate``),
``scores`` (human-normalized scores from published reference tables, and aggregates with
bootstrap intervals) and ``suites`` (the named game lists). Their public paths are
:func:`fastatari.evaluate`, :mod:`fastatari.scores` and :mod:`fastatari.suites`.

Importing this package imports none of its submodules.
"""
