#!/usr/bin/env bash
# The hand-written C (csrc/*.c, fastatari/vector/csrc/*.c, fastatari/replay/csrc/*.c) compiles
# without one warning under every compiler a fastatari wheel meets, each with -Wall -Wextra
# -Werror:
#   gcc, clang                           Linux x86-64 (and the x86 SIMD variants)
#   x86_64-w64-mingw32-gcc               Windows x86-64 (the _WIN32 branches)
#   aarch64-linux-gnu-gcc                Linux arm64 (the aarch64 branches)
#   clang --target=aarch64-linux-gnu     clang for arm64 (as macOS builds), with the arm64 headers
#   clang --target=x86_64-w64-mingw32    clang for Windows, with mingw-w64's headers
# Each file is compiled three ways: -O2; -O2 -DNDEBUG; and as a build compiles it (setup.py's
# flags after Python's own: -O3 -fwrapv -DNDEBUG -fPIC -ffp-contract=off -fno-math-errno -g0).
# NumPy's and Python's headers are not needed: the Cython modules are not compiled here. MSVC is
# not checked (no MSVC on Linux): Windows wheels are built with it by cibuildwheel.
#
# gcc must be present. Another compiler that is not installed is skipped with a message, unless
# CHECK_C_REQUIRE=all (CI, which installs them all: .ci/run), where a missing one fails. Debian:
#   apt-get install clang gcc-mingw-w64-x86-64 gcc-aarch64-linux-gnu
#
# Usage: bash scripts/check_c.sh          (CHECK_C_REQUIRE=all: every compiler must be present)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

REQUIRE_ALL=0
case "${CHECK_C_REQUIRE:-}" in
    "") ;;
    all) REQUIRE_ALL=1 ;;
    *) echo "CHECK_C_REQUIRE must be empty or 'all', not '${CHECK_C_REQUIRE}'" >&2; exit 2 ;;
esac

shopt -s nullglob
SOURCES=(csrc/*.c fastatari/vector/csrc/*.c fastatari/replay/csrc/*.c)
shopt -u nullglob
[[ ${#SOURCES[@]} -ge 4 ]] || { echo "FAIL: expected at least 4 C files, found: ${SOURCES[*]}" >&2; exit 1; }
INCLUDES=(-Icsrc -Ifastatari/vector/csrc -Ifastatari/replay/csrc)
WARN=(-std=c99 -Wall -Wextra -Werror -ffp-contract=off)
VARIANTS=(
    "-O2"
    "-O2 -DNDEBUG"
    "-O3 -fwrapv -DNDEBUG -fPIC -fno-math-errno -g0"
)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/fastatari-check-c.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
printf '#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n' \
    >"$WORK/probe.c"

failed=0
checked=0
skipped=()

# check NAME PACKAGE COMPILER [ARGS...]: compile every file, every variant, with COMPILER ARGS.
check() {
    local name="$1" package="$2" compiler="$3"
    shift 3
    if ! command -v "$compiler" >/dev/null 2>&1; then
        if [[ "$compiler" == gcc ]]; then
            echo "FAIL: gcc is not installed: it is required (Debian: apt-get install gcc)" >&2
            exit 1
        fi
        if [[ $REQUIRE_ALL == 1 ]]; then
            echo "FAIL: $name: '$compiler' is not installed (CHECK_C_REQUIRE=all; Debian: apt-get install $package)"
            failed=$((failed + 1))
        else
            echo "SKIP: $name: '$compiler' is not installed (Debian: apt-get install $package)"
            skipped+=("$name")
        fi
        return
    fi
    # a cross target needs its C library's headers (the gcc cross packages bring them)
    if ! "$compiler" "$@" -std=c99 -c "$WORK/probe.c" -o "$WORK/probe.o" >"$WORK/probe.log" 2>&1; then
        if [[ $REQUIRE_ALL == 1 ]]; then
            echo "FAIL: $name: cannot compile a file that includes the C library's headers:"
            sed 's/^/    /' "$WORK/probe.log"
            failed=$((failed + 1))
        else
            echo "SKIP: $name: no C library headers for this target (Debian: apt-get install $package)"
            skipped+=("$name")
        fi
        return
    fi
    local version bad=0 n=0 variant src
    version="$("$compiler" "$@" --version 2>/dev/null | head -n1)"
    for variant in "${VARIANTS[@]}"; do
        for src in "${SOURCES[@]}"; do
            n=$((n + 1))
            # shellcheck disable=SC2086 # the variant's flags split on purpose
            if ! "$compiler" "$@" "${WARN[@]}" $variant "${INCLUDES[@]}" -c "$src" \
                -o "$WORK/out.o" >"$WORK/out.log" 2>&1; then
                bad=$((bad + 1))
                echo "FAIL: $name: $compiler $* ${WARN[*]} $variant ${INCLUDES[*]} -c $src" |
                    tr -s ' '
                sed 's/^/    /' "$WORK/out.log"
            fi
        done
    done
    checked=$((checked + 1))
    if [[ $bad == 0 ]]; then
        echo "ok:   $name: $n compiles (${#SOURCES[@]} files x ${#VARIANTS[@]} flag sets), no warnings [$version]"
    else
        echo "FAIL: $name: $bad of $n compiles warned or failed [$version]"
        failed=$((failed + 1))
    fi
}

echo "C files: ${SOURCES[*]}"
echo "flags:   ${WARN[*]} ${INCLUDES[*]}, then each of: $(printf '[%s] ' "${VARIANTS[@]}")"
check "gcc" gcc gcc
check "clang" clang clang
check "mingw-w64 gcc (Windows x86-64)" gcc-mingw-w64-x86-64 x86_64-w64-mingw32-gcc
check "aarch64 gcc (Linux arm64)" gcc-aarch64-linux-gnu aarch64-linux-gnu-gcc
check "clang --target=aarch64-linux-gnu" "clang gcc-aarch64-linux-gnu" clang --target=aarch64-linux-gnu
check "clang --target=x86_64-w64-mingw32" "clang gcc-mingw-w64-x86-64" clang --target=x86_64-w64-mingw32

if [[ $failed -gt 0 ]]; then
    echo "FAIL: $failed compiler(s) warned, failed or were missing (above)"
    exit 1
fi
if [[ ${#skipped[@]} -gt 0 ]]; then
    echo "OK: $checked compiler(s) clean; SKIPPED (not installed): ${skipped[*]}"
else
    echo "OK: every compiler clean ($checked)"
fi
