#!/bin/sh
# The reference figures of docs/BENCHMARKS.md for two builds of `herd`, interleaved run by
# run (before, after, before, after, ...), as CPU time of the whole process (perf stat
# task-clock, every thread), so that a shared machine inflates both sides alike:
#
#   tools/speed_figures.sh path/to/herd-before path/to/herd-after [runs]
#
# Run from the repository root; needs `perf`. Prints `what  build  ms` lines.
set -eu
BEFORE=${1:?usage: tools/speed_figures.sh herd-before herd-after [runs]}
AFTER=${2:?usage: tools/speed_figures.sh herd-before herd-after [runs]}
RUNS=${3:-3}

cpu_ms() {
    perf stat -e task-clock -x, "$@" 2>&1 >/dev/null | grep task-clock | cut -d, -f1
}

each() {
    # $1: a label; the rest: herd's arguments.
    label=$1
    shift
    for _ in $(seq "$RUNS"); do
        for herd in "$BEFORE" "$AFTER"; do
            printf '%s  %s  %s\n' "$label" "$herd" "$(cpu_ms "$herd" "$@")"
        done
    done
}

for rule in immediate constant exponential full equal decorrelated grpc; do
    each "agent-1e6-$rule" storm --clients 1000000 --scale-capacity --rule "$rule" --format json
done
each brooker-sweep sweep scenarios/contention.toml --set clients.count=10..190:10 --runs 100 --format csv
each cohort-1e9-classic storm --engine cohort --clients 1000000000 --rule classic --format json
