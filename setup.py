"""Declares the compiled extensions; everything else lives in pyproject.toml."""
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("FASTATARI_DEBUG_CYTHON") == "1"

if sys.platform == "win32":
    # MSVC: /fp:precise never contracts a*b+c into an FMA.
    compile_args = ["/O2", "/fp:precise"]
else:
    # Portable: no -march; ISA-specific code is reached through run-time dispatch only.
    # -ffp-contract=off keeps OpenCV's float32 rounding (an FMA changes it).
    compile_args = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-std=c99"]
    if not DEBUG:
        compile_args.append("-g0")

# What every extension shares: the flags above, numpy's headers.
common = dict(
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
    extra_compile_args=compile_args,
)

# depends: setuptools recompiles an extension's C files when one of these is newer than the
# built module (it does not scan #includes itself); cythonize follows the .pxd files it cimports.
extensions = [
    Extension(
        "fastatari.kernels._kernels",
        sources=["fastatari/kernels/_kernels.pyx", "csrc/fa_plan.c", "csrc/fa_kernels.c"],
        depends=["csrc/fastatari.h", "csrc/fa_impl.h", "csrc/fa_generic.h", "csrc/fa_avx2.h",
                 "csrc/fa_avx512.h", "fastatari/kernels/_csrc.pxd"],
        include_dirs=["csrc", np.get_include()],
        **common,
    ),
    Extension(
        "fastatari.vector._wait",
        # the transport's C lives beside its one Cython user, in its own folder (never next to
        # Cython's generated _wait.c)
        sources=["fastatari/vector/_wait.pyx", "fastatari/vector/csrc/fa_wait.c"],
        depends=["fastatari/vector/csrc/fa_wait.h", "fastatari/vector/fa_wait.pxd",
                 "fastatari/vector/_codes.pxd"],
        include_dirs=["fastatari/vector/csrc", np.get_include()],
        **common,
    ),
    Extension(
        "fastatari.replay._core",
        sources=["fastatari/replay/_core.pyx", "fastatari/replay/csrc/fa_replay.c",
                 "fastatari/replay/csrc/fa_map.c"],
        depends=["fastatari/replay/csrc/fa_replay.h", "fastatari/replay/csrc/fa_map.h",
                 "fastatari/replay/fa_replay.pxd"],
        include_dirs=["fastatari/replay/csrc", np.get_include()],
        **common,
    ),
    Extension(
        "fastatari.vector._book",
        sources=["fastatari/vector/_book.pyx"],
        depends=["fastatari/vector/_book.pxd", "fastatari/vector/_codes.pxd"],
        include_dirs=[np.get_include()],
        **common,
    ),
    Extension(
        "fastatari.vector._step",
        sources=["fastatari/vector/_step.pyx"],
        # it runs _wait's Transport and reads _book's columns (cimported through their .pxd)
        depends=["fastatari/vector/_wait.pxd", "fastatari/vector/fa_wait.pxd",
                 "fastatari/vector/_book.pxd", "fastatari/vector/_codes.pxd",
                 "fastatari/vector/csrc/fa_wait.h"],
        include_dirs=["fastatari/vector/csrc", np.get_include()],
        **common,
    ),
]

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
}

setup(ext_modules=cythonize(extensions, compiler_directives=directives))
