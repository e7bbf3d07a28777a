#!/usr/bin/env bash
# Compares the CPU time and minor page faults of cold `fsd run`s of a
# generated fan-out of N tasks (bench/fanout.sh's workflow) between two or
# more fsd binaries: ROUNDS alternated rounds of `perf stat -r 5` each, the
# median per binary. perf's task-clock counts every thread's CPU to the
# microsecond (GNU time's user+sys to 10 ms), and alternating the binaries
# spreads a shared machine's load over both; page faults barely move with
# the load.
#
#   bench/cold.sh 1 ./fsd-before ./fsd-after           # one task: a run's fixed cost
#   ROUNDS=15 bench/cold.sh 1000 ./fsd-before ./fsd-after
#
# Needs perf (`apt-get install linux-perf`).
set -euo pipefail
n=${1:?usage: bench/cold.sh N FSD...}
shift
[ $# -ge 1 ] || { echo "usage: bench/cold.sh N FSD..."; exit 2; }
rounds=${ROUNDS:-9}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source <(sed -n '/^gen() {/,/^}/p' "$(dirname "$0")/fanout.sh")
gen "$n" "$work/wf"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for ((r = 0; r < rounds; r++)); do
	for b in "$@"; do
		rm -rf "$work/wf/runs"
		perf stat -x, -e task-clock,minor-faults -r 5 -- "$b" run "$work/wf/fan.workflow.yaml" --runs-dir "$work/wf/runs" 2>&1 >/dev/null |
			awk -F, -v b="$b" '/task-clock/ {t=$1} /minor-faults/ {f=$1} END {print b, t, f}'
	done
done >"$work/raw"
for b in "$@"; do
	printf '%s: %s tasks, task-clock %s ms, minor faults %s (median of %d rounds of 5; load %s)\n' "$b" "$n" \
		"$(awk -v b="$b" '$1 == b {print $2}' "$work/raw" | median)" \
		"$(awk -v b="$b" '$1 == b {print $3}' "$work/raw" | median)" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
done
