"""The public path of :mod:`fastatari.evaluation.scores`: human-normalized scores and aggregates."""
from fastatari.evaluation.scores import *  # noqa: F403
from fastatari.evaluation.scores import __all__  # noqa: F401
