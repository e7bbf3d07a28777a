#!/usr/bin/env bash
# Build benchmark: a cold `go build ./cmd/fsd` with an empty build cache.
# Prints the binary's size (unstripped, and stripped for reference), the
# build's wall time, its CPU time (user + sys of every process it ran),
# the peak RSS of its largest process (the biggest compile or the link),
# and the packages that took the most compiler CPU, from the go command's
# action graph.
#
#   bench/build.sh              # 3 cold builds, each figure's median
#   RUNS=1 TOP=40 bench/build.sh
#   PKG=./cmd/fsd bench/build.sh
#
# The module cache is used as it is (downloads are not what is measured);
# GOCACHE is a fresh empty folder per build, so the standard library is
# compiled too, as on a fresh machine. The shared build cache is never
# touched. Needs GNU time (/usr/bin/time) and jq. Wall time on a shared
# machine is noisy: compare CPU seconds, which other load barely moves,
# and say how busy the machine was (the load average is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
top=${TOP:-25}
pkg=${PKG:-./cmd/fsd}
for tool in /usr/bin/time jq; do
	command -v "$tool" >/dev/null || { echo "bench/build.sh: needs $tool (apt-get install time jq)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

go mod download
echo "go: $(go version | cut -d' ' -f3-)  cores: $(nproc)  load before: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -n | awk '{a[NR]=$1} END {m=(NR+1)/2; if (NR%2) print a[m]; else print (a[NR/2]+a[NR/2+1])/2}'; }

walls=() cpus=() rsss=()
for i in $(seq "$runs"); do
	cache="$work/cache$i"
	mkdir -p "$cache"
	GOCACHE="$cache" /usr/bin/time -o "$work/time$i" -f "%e %U %S %M" \
		go build -debug-actiongraph="$work/ag$i.json" -o "$work/fsd" "$pkg"
	read -r wall user sys rss <"$work/time$i"
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.1f", u+s}')
	printf 'build %d: wall %6.1f s  cpu %6.1f s (user %s + sys %s)  peak rss %4d MB  load %s\n' \
		"$i" "$wall" "$cpu" "$user" "$sys" $((rss / 1024)) "$(cut -d' ' -f1 /proc/loadavg)"
	walls+=("$wall") cpus+=("$cpu") rsss+=("$rss")
	chmod -R u+w "$cache" && rm -rf "$cache"
done

size=$(stat -c %s "$work/fsd")
go build -ldflags="-s -w" -o "$work/fsd-stripped" "$pkg"
ssize=$(stat -c %s "$work/fsd-stripped")
echo
printf 'binary        %6.2f MB unstripped (%d bytes), %.2f MB stripped\n' \
	"$(echo "$size / 1000000" | bc -l)" "$size" "$(echo "$ssize / 1000000" | bc -l)"
printf 'cold build    wall %s s, cpu %s s, peak rss %d MB (medians of %d)\n' \
	"$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${cpus[@]}" | median)" \
	$(($(printf '%s\n' "${rsss[@]}" | median | cut -d. -f1) / 1024)) "$runs"

# CPU per package (compile + asm + cgo actions, user + sys of the commands
# they ran), last build. Module paths are grouped at three elements so that
# a library's internal packages count together; the standard library is one
# line.
echo
echo "compile CPU by package group (last build; seconds):"
jq -r '.[] | select(.Package != null and .Package != "" and (.CmdUser != null or .CmdSys != null))
	| [.Package, ((.CmdUser // 0) + (.CmdSys // 0)) / 1e9] | @tsv' "$work/ag$runs.json" |
	awk -F'\t' '{
		p = $1; n = split(p, e, "/")
		if (e[1] !~ /\./) g = "std (runtime, net/http, crypto, …)"
		else g = e[1] "/" e[2] (n > 2 ? "/" e[3] : "")
		cpu[g] += $2; tot += $2
	} END {
		for (g in cpu) printf "%8.1f  %s\n", cpu[g], g
		printf "%8.1f  total\n", tot > "/dev/stderr"
	}' 2>"$work/total" | sort -rn | head -n "$top"
cat "$work/total"
