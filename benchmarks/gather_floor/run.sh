#!/bin/sh
# The memory floor of a prioritized sample(32)'s stacks (issue 32): three runs of floor.c.
cd "$(dirname "$0")"; gcc -O2 -Wall -o floor floor.c || exit 1
for rep in 1 2 3; do ./floor 500; done
