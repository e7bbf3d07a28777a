#!/usr/bin/env bash
# End-to-end benchmark: a cold `fsd run` of a generated fan-out of N tasks
# (each answered at once by the scripted model) joined by one more task,
# with its run record, under each --durability mode. For each N and mode
# it prints the run's wall time, the time per task, the CPU time (user +
# system), peak RSS and, when strace is installed, the syscalls that make
# up the record (fdatasync/fsync, openat, write, rename) and the floor they
# imply: the run's fdatasync and fsync calls times what one costs on the
# disk under TMPDIR (journal's BenchmarkFdatasync, measured once first;
# FSYNC_US=N skips that), with the wall time as a multiple of it.
# N = 1 is the fixed cost of a cold run: the process's start, its
# schemas and its record, with almost no task in it.
#
#   bench/fanout.sh                 # N = 1 100 1000 10000, both modes, 5 runs each, median
#   bench/fanout.sh 1000            # one size
#   RUNS=9 FSD=./fsd bench/fanout.sh 100 1000
#   MODES=step bench/fanout.sh      # one durability mode
#   FSD_FLAGS=-v bench/fanout.sh   # more flags for every run
#
# Needs bash, GNU time (/usr/bin/time) for CPU time and peak RSS, and
# strace for the syscall counts (optional; `apt-get install strace`).
# Timings on a shared machine are noisy: compare medians of alternated
# runs, and prefer CPU time and the syscall counts, which are not.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1 100 1000 10000)
runs=${RUNS:-5}
flags=${FSD_FLAGS:-}
modes=(${MODES:-step commit-before-effects})
work=$(mktemp -d)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
trap 'rm -rf "$work"' EXIT

# One fdatasync's cost on this disk, in µs: the median of three runs of
# the journal's benchmark in the folder the runs use.
fsync_us=${FSYNC_US:-}
if [ -z "$fsync_us" ]; then
	fsync_us=$(for _ in 1 2 3; do
		TMPDIR=$work go test ./journal -run XXX -bench '^BenchmarkFdatasync$' -benchtime 200x |
			awk '/^BenchmarkFdatasync/ {print $3 / 1000}'
	done | median)
fi
echo "one fdatasync: $fsync_us µs (median of 3 × 200, journal BenchmarkFdatasync under $work)"

fsd=${FSD:-}
if [ -z "$fsd" ]; then
	fsd="$work/fsd"
	go build -o "$fsd" ./cmd/fsd
fi

# gen N DIR writes a fan-out workflow of N tasks and a join into DIR.
gen() {
	local n=$1 dir=$2
	mkdir -p "$dir/skills/fan"
	cat >"$dir/skills/fan/fan.skill.yaml" <<'YAML'
id: fan
name: Fan
description: Answers a fan-out task at once; the joiner reports the count.
version: 1.0.0
instructions: Answer the task.
agents:
  worker: {description: Answers one task., prompt: Answer., max-steps: 2}
  joiner: {description: Joins the results., prompt: Join., max-steps: 2}
YAML
	cat >"$dir/fan.script.yaml" <<'YAML'
agents:
  worker: [{say: 'done {{.Task.ID}}'}]
  joiner: [{say: 'joined'}]
YAML
	{
		echo "name: fanout-$n"
		echo "model: scripted"
		echo "script: fan.script.yaml"
		echo "skills: [./skills]"
		echo "limits: {concurrency: 4, max-pending-tasks: $((n + 1)), max-total-tasks: $((n + 1))}"
		echo "input: fan out"
		echo "tasks:"
		for ((i = 0; i < n; i++)); do echo "  - {id: t$i, assignee: fan/worker, goal: task $i}"; done
		echo "  - id: join"
		echo "    assignee: fan/joiner"
		echo "    goal: join"
		echo -n "    deps: ["
		for ((i = 0; i < n; i++)); do [ $i -gt 0 ] && echo -n ", "; echo -n "t$i"; done
		echo "]"
	} >"$dir/fan.workflow.yaml"
}

printf '%-7s %-22s %8s %12s %8s %12s %5s %8s %7s %s\n' tasks durability wall_s per_task_us cpu_s peak_rss_MiB runs floor_s x_floor syscalls
for n in "${sizes[@]}"; do
	dir="$work/fan$n"
	gen "$n" "$dir"
	"$fsd" validate "$dir" >/dev/null 2>&1 || { echo "generated workflow for $n does not validate:"; "$fsd" validate "$dir"; exit 1; }
	for mode in "${modes[@]}"; do
		walls=() rss=() cpus=()
		for ((r = 0; r < runs; r++)); do
			rm -rf "$dir/runs"
			/usr/bin/time -o "$work/time.txt" -f '%e %M %U %S' "$fsd" run "$dir/fan.workflow.yaml" --runs-dir "$dir/runs" --durability "$mode" $flags >/dev/null 2>"$work/err.txt" ||
				{ echo "fsd run of $n tasks failed:"; cat "$work/err.txt"; exit 1; }
			read -r wall peak user sys < <(tail -1 "$work/time.txt")
			walls+=("$wall")
			rss+=("$peak")
			cpus+=("$(echo "$user + $sys" | bc -l)")
		done
		wall=$(printf '%s\n' "${walls[@]}" | median)
		peak=$(printf '%s\n' "${rss[@]}" | median)
		cpu=$(printf '%s\n' "${cpus[@]}" | median)
		sys="-" floor="-" ratio="-"
		if command -v strace >/dev/null; then
			rm -rf "$dir/runs"
			strace -f -c -o "$work/strace.txt" "$fsd" run "$dir/fan.workflow.yaml" --runs-dir "$dir/runs" --durability "$mode" $flags >/dev/null 2>&1 || true
			sys=$(awk '$NF ~ /^(fsync|fdatasync|openat|write|rename|renameat|sync_file_range)$/ {printf "%s=%s ", $NF, $4}' "$work/strace.txt")
			syncs=$(awk '$NF ~ /^(fsync|fdatasync)$/ {n += $4} END {print n + 0}' "$work/strace.txt")
			floor=$(printf '%.3f' "$(echo "$syncs * $fsync_us / 1000000" | bc -l)")
			ratio=$(printf '%.1f' "$(echo "$wall / $floor" | bc -l)")
		fi
		printf '%-7s %-22s %8.3f %12.1f %8.3f %12.1f %5s %8s %7s %s\n' "$n" "$mode" "$wall" "$(echo "$wall * 1000000 / $n" | bc -l)" "$cpu" "$(echo "$peak / 1024" | bc -l)" "$runs" "$floor" "$ratio" "$sys"
	done
done
