"""Fail unless `import fastatari` finds the installed wheel, not a source tree.

Run it from the directory the tests run in (cibuildwheel's test step and scripts/check_wheel.sh
do): it checks that fastatari and its compiled modules come from this interpreter's
site-packages and that the installed metadata carries ``fastatari.__version__``, then prints
where, the numpy version and the SIMD paths this CPU runs.

    --no-compiler        also fail if a C compiler is on PATH (the check that the wheel
                         installs and runs without one: scripts/check_wheel.sh, wheels.yml)
    --quick-start README also run the README's quick start: the ```python blocks of its
                         "## Use" section (those that need no optional library) and the
                         `fastatari --version` command
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

COMPILERS = ("cc", "gcc", "clang", "c99", "cl", "x86_64-linux-gnu-gcc", "aarch64-linux-gnu-gcc")


def fail(message: str) -> int:
    print(f"FAIL: {message}", file=sys.stderr)
    return 1


def check_installed() -> int:
    import fastatari
    from fastatari import kernels
    from fastatari.kernels import _kernels
    from fastatari.replay import _core
    from fastatari.vector import _step, _wait

    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("platlib", "purelib")}
    for module in (fastatari, _kernels, _wait, _step, _core):
        where = Path(module.__file__).resolve()
        if not any(where.is_relative_to(s) for s in site):
            return fail(f"{module.__name__} imported from {where}, not from site-packages "
                        f"({', '.join(map(str, sorted(site)))})")
    from importlib.metadata import version

    import numpy

    if version("fastatari") != fastatari.__version__:
        return fail(f"the installed metadata says fastatari {version('fastatari')}, "
                    f"fastatari.__version__ {fastatari.__version__}")
    print(f"fastatari {fastatari.__version__} from {Path(fastatari.__file__).parent}")
    compiled = ", ".join(Path(m.__file__).name for m in (_kernels, _wait, _step, _core))
    print(f"compiled modules: {compiled}; numpy {numpy.__version__}; "
          f"SIMD paths on this CPU: {kernels.simd_available()}")
    return 0


def check_no_compiler() -> int:
    config_cc = (sysconfig.get_config_var("CC") or "").split()[:1]  # Python's own, e.g. gcc
    found = {name: shutil.which(name) for name in (*COMPILERS, *config_cc)}
    found = {name: path for name, path in found.items() if path}
    if found:
        return fail(f"a C compiler is on PATH: {found}")
    print(f"no C compiler on PATH ({', '.join(dict.fromkeys((*COMPILERS, *config_cc)))} not "
          f"found; CC={os.environ.get('CC', '(unset)')})")
    return 0


def quick_start_blocks(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    use = re.search(r"^## Use\n(.*?)(?=^## )", text, re.S | re.M)
    if use is None:
        raise SystemExit(f"FAIL: no '## Use' section in {readme}")
    blocks = re.findall(r"^```python[ \t]*\n(.*?)^```[ \t]*$", use.group(1), re.S | re.M)
    return [b for b in blocks if not b.startswith("# requires:")]


def check_quick_start(readme: Path) -> int:
    blocks = quick_start_blocks(readme)
    if not blocks:
        return fail(f"no ```python block in the '## Use' section of {readme}")
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        try:
            for i, code in enumerate(blocks, 1):
                namespace = {"__name__": "__main__"}
                exec(compile(code, f"{readme.name}, ## Use, block {i}", "exec"), namespace)
                lines = [line for line in code.splitlines()
                         if line.strip() and not line.startswith(("import ", "from ", "#"))]
                print(f"quick start block {i} ran: {lines[0][:70] if lines else ''}")
        finally:
            os.chdir(here)
    command = shutil.which("fastatari", path=sysconfig.get_path("scripts"))
    if command is None:
        return fail(f"no `fastatari` command in {sysconfig.get_path('scripts')}")
    out = subprocess.run([command, "--version"], capture_output=True, text=True)
    import fastatari

    if out.returncode != 0 or not out.stdout.startswith(f"fastatari {fastatari.__version__} "):
        return fail(f"`{command} --version` gave {out.returncode}: {out.stdout!r} {out.stderr!r}")
    print(f"`fastatari --version`: {out.stdout.strip()}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-compiler", action="store_true",
                        help="fail if a C compiler is on PATH")
    parser.add_argument("--quick-start", type=Path, metavar="README",
                        help="run the README's quick start (its '## Use' section)")
    args = parser.parse_args()
    if args.no_compiler and check_no_compiler():
        return 1
    if check_installed():
        return 1
    if args.quick_start is not None and check_quick_start(args.quick_start):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
