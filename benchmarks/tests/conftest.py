"""``benchmarks`` is a package of the checkout, not installed: the repository's root goes on
sys.path for these tests and for the worker processes they start (a worker gets the trainer's
sys.path). Last, so that an installed fastatari is still the one imported."""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.append(ROOT)
