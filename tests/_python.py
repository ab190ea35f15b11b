"""Child interpreters that import the same fastatari as the tests: a checkout's (editable) or an
installed wheel's, when the suite runs against one."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any


def same_fastatari(**variables: str) -> dict[str, str]:
    """This process's environment, with its import path as the child's ``PYTHONPATH`` (and
    ``variables`` set)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **variables)


def run_code(code: str, *args: str, env: dict[str, str] | None = None,
             **kwargs: Any) -> subprocess.CompletedProcess:
    """``python -c code *args``, its output captured as text, run from an empty folder:
    ``python -c`` puts its working directory first on ``sys.path``, where a checkout's fastatari
    (no compiled modules when the suite tests an installed wheel) would shadow the one tested."""
    kwargs.setdefault("timeout", 120)
    with tempfile.TemporaryDirectory() as neutral:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              text=True, cwd=neutral, env=env or same_fastatari(), **kwargs)
