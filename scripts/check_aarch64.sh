#!/usr/bin/env bash
# Prove fastatari on linux/arm64 (aarch64) on an x86-64 Debian machine, under QEMU user-mode
# emulation:
#   1. root:  a Debian bookworm arm64 root (debootstrap --foreign, second stage run under
#             qemu-aarch64-static through binfmt_misc) with python3, python3-venv, python3-dev,
#             gcc and ca-certificates; made once and cached;
#   2. venv:  a venv inside the root with the test dependencies from their aarch64 wheels (numpy,
#             Cython, setuptools, wheel, ale-py 0.12.1, gymnasium, opencv-python-headless,
#             pytest, hypothesis; .ci/constraints.txt applies); cached too, remade when that list,
#             the constraints or the root's Python change;
#   3. build: a copy of the working tree as git sees it (tracked and untracked-but-not-ignored
#             files, uncommitted changes included), compiled and installed inside the root with
#             `pip install --no-build-isolation .` (emulated gcc);
#   4. tests: pytest under emulation, from a folder holding only tests/ and pyproject.toml (so
#             the installed package is what is tested):
#               kernels  tests/kernels: every SIMD path fastatari.kernels reports on aarch64
#               parity   tests/test_env_parity.py and a vector subset (make_vec against
#                        gymnasium's vector env on three games, autoreset, async = sync,
#                        rollout): the env and the vector env end to end, worker processes
#                        included (PARITY_TESTS below)
#               replay   the replay memory's frame store (tests/replay/test_core.py) and its
#                        frames on disk (tests/replay/test_disk.py: chunk files mapped by
#                        fa_map.c, a memory saved and opened again)
#   and prints the times of every phase. Exit status: 0 when every group passed; otherwise the
#   first failing group's pytest status (1: tests failed), every group run regardless; 2 when a
#   setup phase failed (the tail of its log shown).
#
# Usage (as root: it runs debootstrap, chroot and mount):
#   scripts/check_aarch64.sh [GROUP[,GROUP...]|all] [-- PYTEST_ARGS...]     (default: all)
#   GROUP: kernels, parity or replay; e.g.  scripts/check_aarch64.sh kernels,replay
#   e.g.  scripts/check_aarch64.sh kernels -- -x -k resize_area
# Environment:
#   FASTATARI_ARM64_ROOT    the cached root (default: $HOME/.cache/fastatari/arm64-root, ~750 MB)
#   FASTATARI_ARM64_FRESH   root: make the root (and the venv) again; venv: the venv only
#   FASTATARI_ARM64_MIRROR  the Debian mirror (default: http://deb.debian.org/debian)
# Needs: debootstrap, qemu-user-static, binfmt-support (installed with apt-get when missing),
# util-linux (unshare, flock, mount), git, tar; network to the Debian mirror and to PyPI (or the
# index pip is configured for: its https index, trusted hosts and proxy are carried into the root,
# with this machine's CA bundle; local file:// indexes and find-links are not: they hold this
# machine's x86-64 wheels).
#
# Times on a 2-core x86-64 machine shared with other work (QEMU 7.2, Python 3.11): root 5.5 min
# when made (the emulated second stage 5 of them; ~470 MB), venv 1 min when made, build 4 min
# (emulated gcc), kernels 2 min, parity 10 min (test_env_parity.py 8 of them). Cached root and
# venv: about 17 min for all, 7 for kernels. Each run ends with a summary of its own times.
#
# Mounts: binfmt_misc is mounted on /proc/sys/fs/binfmt_misc when it is not, and the
# qemu-aarch64 entry enabled; both are left so (machine configuration, as systemd sets it up at
# boot; undoing them would break any other emulated process). Everything else (the root's /proc,
# /sys, /dev, /dev/shm, /tmp) is mounted in a private mount and PID namespace (unshare): removed
# by the exit trap, and gone with the namespace, with every process the tests started, however
# the script ends (SIGINT/SIGTERM end the namespace at once; even SIGKILL of the namespace's
# processes leaves nothing). A lock on $FASTATARI_ARM64_ROOT.lock keeps two runs off one root.
# Nothing is written into the checkout. Speed cannot be measured under emulation.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ARM_ROOT="${FASTATARI_ARM64_ROOT:-$HOME/.cache/fastatari/arm64-root}"
MIRROR="${FASTATARI_ARM64_MIRROR:-http://deb.debian.org/debian}"
FRESH="${FASTATARI_ARM64_FRESH:-}"
SUITE=bookworm
ROOT_PACKAGES="python3,python3-venv,python3-dev,gcc,libc6-dev,ca-certificates"
# The venv's requirements: the build's (pyproject's [build-system], with wheel) and what the
# chosen tests import. ale-py is the version CI tests; .ci/constraints.txt pins the rest where it
# names them.
VENV_REQUIREMENTS=("numpy>=2.0" "Cython>=3.1" "setuptools>=77" "wheel" "ale-py==0.12.1"
    "gymnasium>=1.1" "opencv-python-headless>=4.5" "pytest>=8.2" "hypothesis>=6")
# The parity group: the env against gymnasium's pipeline (all of it), and the vector env end to
# end in about two minutes under emulation: make_vec (2 workers) against gymnasium's vector env
# (breakout; boxing at 64x48, frame skip 3; freeway in RGB with sticky actions), same-step
# autoreset against gymnasium's, async send/recv equal to sync steps, rollout equal to step by
# step.
PARITY_TESTS=(
    tests/test_env_parity.py
    "tests/vector/test_env.py::test_parity_with_gymnasium_vector_env[2]"
    "tests/vector/test_env.py::test_parity_games_and_options[boxing-options1]"
    "tests/vector/test_env.py::test_parity_games_and_options[freeway-options2]"
    tests/vector/test_env.py::test_same_step_autoreset_matches_gymnasium
    "tests/vector/test_env.py::test_async_results_equal_sync_results[4-2]"
    "tests/vector/test_rollout.py::test_rollout_equals_steps_one_by_one[next_step]"
)
KERNEL_TESTS=(tests/kernels)
REPLAY_TESTS=(tests/replay/test_core.py tests/replay/test_disk.py)

VENV=/opt/fastatari-venv # inside the root
SRC=/root/fastatari-src  # the working tree's copy, inside the root
RUN=/root/fastatari-run  # tests/ and pyproject.toml, inside the root
LOGS=/root/fastatari-logs

START=$SECONDS
step() { printf '\n==> [%4ss] %s\n' "$((SECONDS - START))" "$*"; }
fail() {
    printf '\nFAIL: %s\n' "$*" >&2
    exit 2
}
usage() { # usage STATUS
    sed -n '/^# Usage/,/^# Needs/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit "$1"
}

# ================================================================================================
# Outside: arguments, tools, binfmt_misc; then this script again in a private namespace.
# ================================================================================================
if [[ "${1:-}" != --inside-namespace ]]; then
    GROUP=all
    if [[ $# -gt 0 && "$1" != -- ]]; then
        GROUP="$1"
        shift
    fi
    case "$GROUP" in -h | --help) usage 0 ;; esac
    for g in ${GROUP//,/ }; do
        case "$g" in kernels | parity | replay | all) ;; *) usage 2 ;; esac
    done
    if [[ $# -gt 0 ]]; then
        [[ "$1" == -- ]] || usage 2
        shift
    fi
    [[ $EUID -eq 0 ]] || fail "run as root (debootstrap, chroot and mount need it)"
    [[ "$(uname -m)" == x86_64 ]] || echo "note: this machine is $(uname -m), not x86_64"

    step "0 tools and binfmt_misc"
    missing=()
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
    command -v update-binfmts >/dev/null || missing+=(binfmt-support)
    if [[ ${#missing[@]} -gt 0 ]]; then
        command -v apt-get >/dev/null || fail "missing: ${missing[*]} (and no apt-get to install them)"
        echo "    installing ${missing[*]} with apt-get"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
            >/dev/null || fail "apt-get install ${missing[*]} failed"
    fi
    for tool in unshare flock chroot mount umount mountpoint git tar sha256sum; do
        command -v "$tool" >/dev/null || fail "'$tool' not found (Debian: util-linux, coreutils, git, tar)"
    done
    BINFMT=/proc/sys/fs/binfmt_misc
    if ! mountpoint -q "$BINFMT"; then
        mount binfmt_misc -t binfmt_misc "$BINFMT" || fail "cannot mount binfmt_misc on $BINFMT"
        echo "    mounted binfmt_misc on $BINFMT (left mounted: machine configuration)"
    fi
    if [[ "$(head -n1 "$BINFMT/qemu-aarch64" 2>/dev/null)" != enabled ]]; then
        update-binfmts --enable qemu-aarch64 || fail "update-binfmts --enable qemu-aarch64 failed"
        echo "    enabled the qemu-aarch64 binfmt entry"
    fi
    [[ "$(head -n1 "$BINFMT/qemu-aarch64")" == enabled ]] || fail "qemu-aarch64 binfmt entry not enabled"
    echo "    $(qemu-aarch64-static --version | head -n1); binfmt qemu-aarch64:" \
        "$(grep -E '^(interpreter|flags)' "$BINFMT/qemu-aarch64" | tr '\n' ' ')"

    mkdir -p "$(dirname "$ARM_ROOT")"
    ARM_ROOT="$(cd "$(dirname "$ARM_ROOT")" && pwd)/$(basename "$ARM_ROOT")"
    exec 9>"$ARM_ROOT.lock"
    flock -n 9 || {
        echo "    another run holds $ARM_ROOT.lock; waiting for it"
        flock 9
    }
    # A private mount namespace (nothing mounted here is seen outside or outlives the script) and
    # PID namespace (every process the tests leave behind dies with it). unshare ignores SIGINT
    # and SIGTERM while it waits; on either (or SIGHUP) here, the namespace's first process is
    # killed, which ends every process and mount in it at once.
    export FASTATARI_ARM64_ROOT="$ARM_ROOT" START_OUTSIDE=$SECONDS
    # (set -m: started as a job of its own, so that SIGINT is not ignored in there as it would be
    # in a background command)
    set -m
    unshare --mount --pid --fork --propagation private -- \
        bash "${BASH_SOURCE[0]}" --inside-namespace "$GROUP" "$@" &
    NS_PARENT=$!
    set +m
    stop() {
        local init
        init="$(cat "/proc/$NS_PARENT/task/$NS_PARENT/children" 2>/dev/null || true)"
        [[ -n "$init" ]] && kill -KILL $init 2>/dev/null
        wait "$NS_PARENT" 2>/dev/null || true # (unshare may say "sigprocmask unblock failed")
        printf '\nstopped (signal): every process and mount of the run is gone\n' >&2
        exit "$1"
    }
    trap 'stop 130' INT
    trap 'stop 143' TERM
    trap 'stop 129' HUP
    status=0
    wait "$NS_PARENT" || status=$?
    exit "$status"
fi

# ================================================================================================
# Inside the namespace (PID 1 of it).
# ================================================================================================
shift
GROUP="$1"
shift
PYTEST_EXTRA=("$@")
START=$((-${START_OUTSIDE:-0})) # the outside part's seconds count too
R="$ARM_ROOT"
BINFMT=/proc/sys/fs/binfmt_misc

declare -A TIMES=()
PHASES=()
timed() { # timed NAME SECONDS NOTE
    PHASES+=("$1")
    TIMES[$1]="$(printf '%5ss  %s' "$2" "${3:-}")"
}

# Everything mounted under the root, deepest first (from this namespace's mount table).
mounts_under_root() {
    awk -v r="$R" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}
unmount_root() {
    local m
    for m in $(mounts_under_root); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
}
cleanup() {
    local status=$?
    unmount_root
    if [[ -n "$(mounts_under_root)" ]]; then
        echo "warning: still mounted (gone with the namespace): $(mounts_under_root | tr '\n' ' ')" >&2
    fi
    exit "$status"
}
trap cleanup EXIT

# Run a noisy command with its output in a log; on failure show the log's tail and stop.
logged() {
    local log="$1"
    shift
    mkdir -p "$(dirname "$log")"
    if ! "$@" >"$log" 2>&1; then
        printf '\n--- last lines of %s ---\n' "$log" >&2
        tail -n 60 "$log" >&2
        fail "$(basename "$log" .log) failed (log: $log)"
    fi
}

# ------------------------------------------------------------------------------------------------
# The environment of every command in the root: nothing of this machine's (its PIP_* settings
# may name x86-64 wheel folders), but its CA bundle, its https index and its proxy.
ROOT_ENV=(HOME=/root "PATH=$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    LANG=C.UTF-8 LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
    PIP_NO_INPUT=1 "TERM=${TERM:-dumb}")
for var in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY ALL_PROXY all_proxy; do
    [[ -n "${!var:-}" ]] && ROOT_ENV+=("$var=${!var}")
done
# pip's settings here (its config files and PIP_* variables, as `pip config list` shows them,
# the variables first): the index, extra indexes, trusted hosts, proxy, timeout and retries,
# without local paths; and the CA bundle it uses.
PIP_CARRIED=()
PIP_CONFIG_CERT=""
if command -v python3 >/dev/null && pip_config="$(python3 -m pip config list 2>/dev/null)"; then
    declare -A seen=()
    while IFS= read -r line; do
        key="${line%%=*}"
        key="${key#*.}"
        value="${line#*=}"
        value="${value#\'}"
        value="${value%\'}"
        [[ "$key" == default-timeout ]] && key=timeout
        [[ -z "${seen[$key]:-}" ]] || continue # the first is the one pip uses
        seen[$key]=1
        case "$key" in
        cert) PIP_CONFIG_CERT="$value" ;;
        index-url | extra-index-url | trusted-host | proxy | timeout | retries)
            kept=()
            for word in $value; do
                case "$word" in file:* | /* | .*) ;; *) kept+=("$word") ;; esac
            done
            if [[ ${#kept[@]} -gt 0 ]]; then
                var="PIP_$(tr 'a-z-' 'A-Z_' <<<"$key")"
                ROOT_ENV+=("$var=${kept[*]}")
                PIP_CARRIED+=("$var=${kept[*]}")
            fi
            ;;
        esac
    done <<<"$pip_config"
fi
HOST_CA=""
for f in "$PIP_CONFIG_CERT" "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" \
    /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    if [[ -n "$f" && -s "$f" ]]; then
        HOST_CA="$f"
        break
    fi
done
ROOT_CA=/etc/fastatari/host-ca-bundle.crt
[[ -n "$HOST_CA" ]] && ROOT_ENV+=("PIP_CERT=$ROOT_CA" "SSL_CERT_FILE=$ROOT_CA" "REQUESTS_CA_BUNDLE=$ROOT_CA")

in_root() { chroot "$R" /usr/bin/env -i "${ROOT_ENV[@]}" "$@"; }

mount_root() {
    unmount_root
    mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
    mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
    mount --rbind /dev "$R/dev"
    mount --make-rslave "$R/dev"
    # the root's own shared memory (the vector env's buffers) and temporary files, gone on exit
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$R/dev/shm"
    mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$R/tmp"
}
# Files the root takes from this machine on every run: name resolution and the CA bundle.
refresh_root_files() {
    cp -L /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
    cp -L /etc/hosts "$R/etc/hosts" 2>/dev/null || true
    if [[ -n "$HOST_CA" ]]; then
        mkdir -p "$R$(dirname "$ROOT_CA")"
        cp -L "$HOST_CA" "$R$ROOT_CA"
    fi
}
# Without binfmt's F flag the kernel looks for the interpreter inside the root: put it there.
place_interpreter() {
    local interp
    interp="$(awk '$1 == "interpreter" { print $2 }' "$BINFMT/qemu-aarch64")"
    if ! grep -qE '^flags:.*F' "$BINFMT/qemu-aarch64"; then
        mkdir -p "$R$(dirname "$interp")"
        cp -L "$(command -v qemu-aarch64-static)" "$R$interp"
    fi
}

# ------------------------------------------------------------------------------------------------
step "1/5 root: Debian $SUITE arm64 in $R"
ROOT_KEY="debootstrap $SUITE arm64 minbase $ROOT_PACKAGES"
ROOT_OK="$R/.fastatari-root-ok"
[[ "$FRESH" == root ]] && rm -f "$ROOT_OK"
if [[ -f "$ROOT_OK" && "$(head -n1 "$ROOT_OK")" == "$ROOT_KEY" ]]; then
    timed root 0 "cached ($(sed -n 2p "$ROOT_OK"))"
    echo "    cached: $(sed -n 2p "$ROOT_OK")"
else
    t0=$SECONDS
    if [[ -e "$R" ]]; then
        # only a folder this script made (or an empty one) is ever removed
        [[ -f "$R/.fastatari-root" || -z "$(ls -A "$R")" ]] ||
            fail "$R exists and is not a root this script made: remove it or set FASTATARI_ARM64_ROOT"
        unmount_root
        [[ -z "$(mounts_under_root)" ]] || fail "cannot unmount $(mounts_under_root | head -n1)"
        rm -rf --one-file-system "$R"
    fi
    mkdir -p "$R"
    touch "$R/.fastatari-root"
    LOG_ROOT="$(dirname "$R")/$(basename "$R")-debootstrap.log"
    echo "    first stage on this machine (download, unpack; log: $LOG_ROOT)"
    logged "$LOG_ROOT" debootstrap --arch=arm64 --foreign --variant=minbase \
        --include="$ROOT_PACKAGES" "$SUITE" "$R" "$MIRROR"
    place_interpreter
    [[ "$(chroot "$R" /usr/bin/uname -m 2>&1)" == aarch64 ]] ||
        fail "the root's binaries do not run under emulation (binfmt qemu-aarch64?)"
    echo "    second stage under emulation (configure the packages)"
    t1=$SECONDS
    logged "$LOG_ROOT.2" chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        /debootstrap/debootstrap --second-stage
    unmount_root # what the second stage may have left mounted
    rm -f "$R/var/cache/apt/archives/"*.deb
    took="$((SECONDS - t0))s on $(date -u +%F) (second stage $((SECONDS - t1))s)"
    printf '%s\n%s\n' "$ROOT_KEY" "made in $took" >"$ROOT_OK"
    timed root $((SECONDS - t0)) "made (second stage $((SECONDS - t1))s, emulated)"
    echo "    made in $took; $(du -sh --one-file-system "$R" | cut -f1)"
fi
place_interpreter
refresh_root_files
mount_root
echo "    $(in_root /bin/sh -c '. /etc/os-release; echo "$PRETTY_NAME"') $(in_root uname -m)," \
    "$(in_root python3 --version), $(in_root gcc --version | head -n1)"
[[ -n "$HOST_CA" ]] && echo "    CA bundle: $HOST_CA -> $ROOT_CA"
[[ ${#PIP_CARRIED[@]} -gt 0 ]] && echo "    pip settings carried in: ${PIP_CARRIED[*]}"

# ------------------------------------------------------------------------------------------------
step "2/5 venv: $VENV in the root, test dependencies from aarch64 wheels"
cp "$REPO/.ci/constraints.txt" "$R/tmp/constraints.txt"
VENV_KEY="$({
    printf '%s\n' "${VENV_REQUIREMENTS[@]}"
    cat "$REPO/.ci/constraints.txt"
    in_root python3 -c 'import sys; print(sys.version)'
} | sha256sum | cut -c1-16)"
VENV_OK="$R$VENV/.fastatari-venv-ok"
[[ -n "$FRESH" ]] && rm -f "$VENV_OK"
if [[ -f "$VENV_OK" && "$(head -n1 "$VENV_OK")" == "$VENV_KEY" ]]; then
    timed venv 0 "cached ($(sed -n 2p "$VENV_OK"))"
    echo "    cached: $(sed -n 2p "$VENV_OK")"
else
    t0=$SECONDS
    rm -rf --one-file-system "${R:?}$VENV"
    logged "$R$LOGS/venv.log" in_root /bin/sh -c "python3 -m venv $VENV &&
        $VENV/bin/python -m pip install --only-binary=:all: -c /tmp/constraints.txt $(printf "'%s' " "${VENV_REQUIREMENTS[@]}")"
    printf '%s\n%s\n' "$VENV_KEY" "made in $((SECONDS - t0))s on $(date -u +%F)" >"$VENV_OK"
    timed venv $((SECONDS - t0)) "made"
    echo "    made in $((SECONDS - t0))s"
fi
echo "    $(in_root python -m pip list --format=freeze 2>/dev/null |
    grep -iE '^(numpy|cython|setuptools|ale.py|gymnasium|opencv-python-headless|pytest|hypothesis)==' |
    tr '\n' ' ')"

# ------------------------------------------------------------------------------------------------
step "3/5 build: the working tree (git's view, uncommitted changes included) into the root"
t0=$SECONDS
rm -rf --one-file-system "${R:?}$SRC" "${R:?}$RUN" "${R:?}$LOGS"
mkdir -p "$R$SRC" "$R$RUN/scripts" "$R$LOGS"
git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1 || fail "$REPO is not a git checkout"
mapfile -d '' listed < <(git -C "$REPO" ls-files -z -co --exclude-standard)
present=()
for f in "${listed[@]}"; do
    [[ -e "$REPO/$f" || -L "$REPO/$f" ]] && present+=("$f") # tracked files deleted here are skipped
done
printf '%s\0' "${present[@]}" | tar -C "$REPO" --null -T - -cf - | tar -C "$R$SRC" -xf -
[[ -f "$R$SRC/pyproject.toml" && -f "$R$SRC/fastatari/kernels/_kernels.pyx" ]] || fail "incomplete source copy"
cp -r "$R$SRC/tests" "$R$SRC/pyproject.toml" "$R$RUN/"
cp "$R$SRC/scripts/check_installed.py" "$R$RUN/scripts/"
echo "    ${#present[@]} files from $(git -C "$REPO" rev-parse --short HEAD)" \
    "($(git -C "$REPO" status --porcelain | wc -l) changed or new here)"
t1=$SECONDS
in_root python -m pip uninstall -y -q fastatari >/dev/null 2>&1 || true
# with its runtime dependencies: those the venv lacks (one added since it was made) come in here
logged "$R$LOGS/build.log" in_root /bin/sh -c "cd $SRC && python -m pip install -v \
    --no-build-isolation --prefer-binary -c /tmp/constraints.txt ."
grep -E '^(gcc|cc|aarch64-linux-gnu-gcc)\b' "$R$LOGS/build.log" | grep -qE -- '-march=|-mcpu=' &&
    fail "ISA flags on a compile command (see $R$LOGS/build.log)"
timed build $((SECONDS - t1)) "emulated compile + install (copy $((t1 - t0))s)"
echo "    built and installed in $((SECONDS - t1))s (log: $R$LOGS/build.log)"
sed -n 's/^Successfully installed /    installed: /p' "$R$LOGS/build.log"
in_root /bin/sh -c "cd $RUN && python scripts/check_installed.py" | sed 's/^/    /' ||
    fail "scripts/check_installed.py: the installed package does not import (above)"
echo "    $(in_root /bin/sh -c "cd $RUN && python -c 'import fastatari.kernels as k; print(k.simd_path(), k.simd_available())'")" \
    "  <- python -c 'import fastatari.kernels as k; print(k.simd_path(), k.simd_available())'"

# ------------------------------------------------------------------------------------------------
FIRST_FAILURE=0
declare -A SUMMARY=()
run_group() { # run_group NAME TESTS...
    local name="$1" status
    shift
    local t0=$SECONDS log="$R$LOGS/pytest-$name.log"
    set +e
    in_root /bin/sh -c 'cd "$0" && exec python -m pytest "$@"' "$RUN" "$@" -p no:cacheprovider \
        --rootdir "$RUN" -q --tb=short --durations=10 "${PYTEST_EXTRA[@]}" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    SUMMARY[$name]="$(grep -E '^=* ?[0-9]+ (passed|failed|error|skipped|deselected).* in [0-9.]+s' "$log" |
        tail -n1 | sed -E 's/^=+ //; s/ =+$//')"
    [[ -n "${SUMMARY[$name]}" ]] || SUMMARY[$name]="no summary (exit status $status)"
    timed "$name" $((SECONDS - t0)) "exit $status: ${SUMMARY[$name]}"
    [[ $status -eq 0 || $FIRST_FAILURE -ne 0 ]] || FIRST_FAILURE=$status
}
# python -m pytest from $RUN puts $RUN (no fastatari/ there) first on sys.path: the installed
# package is imported.
wants() { [[ ",$GROUP," == *",$1,"* || "$GROUP" == all ]]; }
if wants kernels; then
    step "4/5 tests: kernels (${KERNEL_TESTS[*]}), under emulation"
    run_group kernels "${KERNEL_TESTS[@]}"
fi
if wants replay; then
    step "4/5 tests: replay (${REPLAY_TESTS[*]}), under emulation"
    run_group replay "${REPLAY_TESTS[@]}"
fi
if wants parity; then
    step "5/5 tests: parity (${#PARITY_TESTS[@]} selections), under emulation"
    run_group parity "${PARITY_TESTS[@]}"
fi

step "summary (aarch64 under QEMU user-mode emulation; logs in $R$LOGS)"
for p in "${PHASES[@]}"; do
    printf '    %-8s %s\n' "$p" "${TIMES[$p]}"
done
printf '    %-8s %5ss\n' total "$((SECONDS - START))"
exit "$FIRST_FAILURE"
