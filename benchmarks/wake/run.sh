#!/bin/sh
# One wake of the trainer, today's epoll wait against a futex wait (issue 31): PIN=1 pins
# the trainer to CPU 0 and the worker to CPU 1.
# 3 interleaved repetitions of every variant, then medians
cd "$(dirname "$0")"; gcc -O2 -Wall -o wake wake.c || exit 1
: > results.txt
for rep in 1 2 3; do
  for v in "A 2" "A 16" "B 0" "C 2" "C 16" $EXTRA; do ./wake $v 20000 $MODE >> results.txt; done
done
awk '{k=$1" "$2" "$3; for(i=4;i<=NF;i++){split($i,a,"="); v[k,a[1],++n[k,a[1]]]=a[2]} keys[k]=1}
function med(k,f){x=v[k,f,1];y=v[k,f,2];z=v[k,f,3]; if(x>y){t=x;x=y;y=t} if(y>z){t=y;y=z;z=t} if(x>y){t=x;x=y;y=t} return y}
END{printf "%-22s %10s %10s %10s %10s %8s\n","variant","trainerCPU","wkWakeCPU","wkWakeWall","wall","slept";
for(k in keys) printf "%-22s %10s %10s %10s %10s %8s\n",k,med(k,"trainer_cpu_us"),med(k,"worker_wake_cpu_us"),med(k,"worker_wake_us"),med(k,"wall_us"),med(k,"slept")}' results.txt | sort
