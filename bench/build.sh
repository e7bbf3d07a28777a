#!/usr/bin/env bash
# Build benchmark: a cold `go build ./cmd/fsd` with an empty build cache.
# Prints the binary's size (unstripped, and stripped for reference), the
# build's wall time, its CPU time (user + sys of every process it ran),
# the peak RSS of its largest process (the biggest compile or the link),
# the modules that took the most compiler CPU, from the go command's
# action graph, and the graph's critical path, from which it estimates
# the wall time of a quiet machine.
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

# Compiler CPU (user + sys of the commands each action ran) by module,
# from the last build's action graph: the standard library is one line,
# the C compiler that cgo runs for net and os/user another, the linker a
# third.
echo
echo "compile CPU by module (last build; seconds):"
go list -deps -f '{{.ImportPath}}	{{with .Module}}{{.Path}}{{else}}std{{end}}' "$pkg" >"$work/modules"
jq -r '.[] | select(.CmdUser != null or .CmdSys != null)
	| [.Mode, (.Package // ""), ((.CmdUser // 0) + (.CmdSys // 0)) / 1e9] | @tsv' "$work/ag$runs.json" |
	awk -F'\t' 'NR == FNR { mod[$1] = $2; next }
	{
		if ($1 ~ /^link/) g = "(link)"
		else if ($1 ~ /^cgo/) g = "(cgo: C compiler)"
		else g = ($2 in mod) ? mod[$2] : $2
		if (g == "std") g = "std (runtime, net/http, crypto, …)"
		cpu[g] += $3; tot += $3
	} END {
		for (g in cpu) printf "%8.1f  %s\n", cpu[g], g
		printf "%8.1f  total\n", tot > "/dev/stderr"
	}' "$work/modules" - 2>"$work/total" | sort -rn | head -n "$top"
cat "$work/total"

# The longest chain of dependent actions, in CPU seconds: no number of idle
# cores builds faster than this, and cpu/cores bounds the rest, so
# max(critical path, cpu / cores) estimates the wall time of a quiet
# machine from a run on a busy one.
crit=$(jq -r '.[] | [.ID, (((.CmdUser // 0) + (.CmdSys // 0)) / 1e9), ((.Deps // []) | map(tostring) | join(","))] | @tsv' "$work/ag$runs.json" |
	awk -F'\t' '{ id[NR] = $1; cpu[$1] = $2; deps[$1] = $3; n = NR }
	END {
		do {
			changed = 0
			for (i = 1; i <= n; i++) {
				a = id[i]; best = 0
				if (deps[a] != "") { k = split(deps[a], d, ","); for (j = 1; j <= k; j++) if (fin[d[j]] > best) best = fin[d[j]] }
				if (best + cpu[a] != fin[a]) { fin[a] = best + cpu[a]; changed = 1 }
			}
		} while (changed)
		for (a in fin) if (fin[a] > m) m = fin[a]
		printf "%.1f", m
	}')
total=$(awk '{print $1}' "$work/total")
echo
awk -v c="$crit" -v t="$total" -v n="$(nproc)" 'BEGIN {
	w = t / n; if (c > w) w = c
	printf "critical path %.1f s of CPU; quiet-machine wall estimate max(%.1f, %.1f / %d cores) = %.1f s\n", c, c, t, n, w
}'
