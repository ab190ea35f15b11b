# The public names of fastatari and the modules that define them, listed once: type checkers
# read them here, and fastatari/__init__.py loads each on first use from this list
# (lazy_loader.attach_stub: relative imports only).
from . import kernels as kernels
from .core.options import AtariOptions as AtariOptions
from .env import AtariEnv as AtariEnv
from .env import AtariPreprocessing as AtariPreprocessing
from .evaluation import scores as scores
from .evaluation import suites as suites
from .evaluation.evaluate import evaluate as evaluate
from .vector import AtariVectorEnv as AtariVectorEnv
from .vector import make_vec as make_vec

__version__: str
