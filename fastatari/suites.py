"""The public path of :mod:`fastatari.evaluation.suites`: named lists of games (``ATARI_57``...)."""
from fastatari.evaluation.suites import *  # noqa: F403
from fastatari.evaluation.suites import __all__  # noqa: F401
