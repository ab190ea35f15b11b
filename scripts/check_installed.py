"""Fail unless `import fastatari` finds the installed wheel, not a source tree.

Run it from the directory the tests run in (cibuildwheel's test step and scripts/check_wheel.sh
do): it checks that fastatari and its compiled modules come from this interpreter's
site-packages, then prints where, the numpy version and the SIMD paths this CPU runs.
"""
from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def main() -> int:
    import fastatari
    from fastatari import kernels
    from fastatari.kernels import _kernels
    from fastatari.replay import _core
    from fastatari.vector import _step, _wait

    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("platlib", "purelib")}
    for module in (fastatari, _kernels, _wait, _step, _core):
        where = Path(module.__file__).resolve()
        if not any(where.is_relative_to(s) for s in site):
            print(f"FAIL: {module.__name__} imported from {where}, not from site-packages "
                  f"({', '.join(map(str, sorted(site)))})", file=sys.stderr)
            return 1
    import numpy

    print(f"fastatari {fastatari.__version__} from {Path(fastatari.__file__).parent}")
    compiled = ", ".join(Path(m.__file__).name for m in (_kernels, _wait, _step, _core))
    print(f"compiled modules: {compiled}; numpy {numpy.__version__}; "
          f"SIMD paths on this CPU: {kernels.simd_available()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
