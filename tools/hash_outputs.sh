#!/bin/sh
# Hashes the JSON (or text) output of every shipped scenario across all rules and both storm
# engines, one line per command: `sha256  command`. Run it with two builds of `herd` and
# diff the lists to check that a change left every seeded output bit-identical:
#
#   tools/hash_outputs.sh path/to/herd-before > before.txt
#   tools/hash_outputs.sh path/to/herd-after  > after.txt
#   diff before.txt after.txt && echo identical
#
# Run from the repository root. Every run is seeded, so the lists are the same on every
# machine; a line that differs names the command whose output changed.
set -eu
HERD=${1:?usage: tools/hash_outputs.sh path/to/herd}

run() {
    # $@: the herd arguments. Prints the hash of stdout, then the command; a run that herd
    # refuses (the work limit at three million clients retrying at once, say) prints
    # `exit N` and the hash of its error message instead, so a refusal that changes shows too.
    err=$(mktemp)
    if out=$("$HERD" "$@" 2>"$err"); then
        printf '%s  %s\n' "$(printf '%s' "$out" | sha256sum | cut -c1-16)" "$*"
    else
        code=$?
        printf 'exit %s %s  %s\n' "$code" "$(sha256sum <"$err" | cut -c1-16)" "$*"
    fi
    rm -f "$err"
}

RULES="immediate constant exponential full equal decorrelated grpc decorrelated-v2"
STORMS="scenarios/default.toml scenarios/refusal-cost.toml scenarios/six-clients.toml scenarios/sixty-consoles.toml"

for file in $STORMS; do
    for engine in agent cohort; do
        for rule in $RULES; do
            run storm "$file" --format json --engine "$engine" --rule "$rule"
            run storm "$file" --format json --engine "$engine" --rule "$rule" --pauses continuous
        done
        run storm "$file" --format json --engine "$engine" --rule all --runs 3 --seed 7
    done
done
# The default scenario under the features that draw more: latency, Retry-After, deadlines,
# budgets, open-loop arrivals, at two sizes.
for engine in agent cohort; do
    for rule in $RULES; do
        run storm --format json --engine "$engine" --rule "$rule" --latency-ms 300,200
        run storm --format json --engine "$engine" --rule "$rule" --clients 200000 --scale-capacity
        run storm --format json --engine "$engine" --rule "$rule" --clients 3000000
        run sweep --format json --rule "$rule" --runs 2 --set server.retry_after_s=0,2 \
            --set clients.deadline_s=0,60 --set retry.budget_percent=0,10 \
            --set clients.arrivals_per_s=0,50 --set clients.max_attempts=0,5
    done
done
for file in scenarios/metastable*.toml; do
    run storm "$file" --format json
    run sweep "$file" --format json --runs 3
done
run storm scenarios/contention.toml --format json --runs 5
run sweep scenarios/contention.toml --format json --runs 5 --set clients.count=10,50,100
run hedge --format json
run hedge scenarios/hedge-overload.toml --format json --requests 40000
run hedge scenarios/lab-hedge.toml --format json
for g in scenarios/graphs/*.toml; do
    run amplify "$g" --format json
done
for rule in $RULES; do
    run rules --rule "$rule" --samples 50 --failures 30
done
