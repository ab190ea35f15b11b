#!/bin/sh
# Instructions per fused step of each AArch64 SIMD path, counted under user-mode emulation (issue
# 43): qemu runs one instruction per translation block (-singlestep) and logs each block it
# executes (-d nochain,exec), so the log's lines count the instructions. Runs of 1 and 3 steps;
# the difference / 2 is one step without the start-up. Needs gcc-aarch64-linux-gnu and
# qemu-user-static. Emulation counts instructions, not time.
set -eu
cd "$(dirname "$0")"
CSRC=../../csrc
aarch64-linux-gnu-gcc -O3 -ffp-contract=off -fno-math-errno -std=c99 -static -I"$CSRC" \
    icount.c "$CSRC/fa_kernels.c" "$CSRC/fa_plan.c" -lm -o icount-aarch64
log=$(mktemp)
trap 'rm -f "$log"' EXIT
count() { qemu-aarch64-static -singlestep -d nochain,exec -D "$log" ./icount-aarch64 "$1" "$2" || true; grep -c '^Trace' "$log"; }
for path in scalar neon; do
    one=$(count "$path" 1)
    three=$(count "$path" 3)
    echo "$path $(( (three - one) / 2 ))"
done | awk '{n[$1]=$2; printf "%-7s %9d instructions per step\n", $1, $2}
            END {printf "scalar / neon: %.2fx\n", n["scalar"] / n["neon"]}'
