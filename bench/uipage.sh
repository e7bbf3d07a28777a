#!/usr/bin/env bash
# fsd ui's cost per page of a run: starts `fsd ui` on a runs folder, and
# fetches /api/runs/RUN?from=N (the first page, then one of the middle
# of its tasks) COUNT times each, printing the server's CPU time per fetch (user +
# system, from /proc/PID/stat), its peak RSS (VmHWM) and the bytes sent.
# The run's first fetch builds its index; the later ones find it kept.
#
#   bench/uipage.sh RUNS_DIR RUN_ID           # COUNT=20, the fsd built here
#   FSD=/tmp/fsd-old COUNT=5 bench/uipage.sh RUNS_DIR RUN_ID
#
# Make a large run with bench/fanout.sh's gen and `fsd run`. Needs bash,
# curl and Linux's /proc.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=$1 id=$2 count=${COUNT:-20} port=${PORT:-18484}
fsd=${FSD:-}
if [ -z "$fsd" ]; then
	fsd=$(mktemp -d)/fsd
	go build -o "$fsd" ./cmd/fsd
fi
"$fsd" ui --runs-dir "$runs" --addr "127.0.0.1:$port" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/api/runs" && break; sleep 0.1; done
hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{print ($14 + $15) * 1000 / hz}' "/proc/$pid/stat"; }
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %10s %12s %12s\n' fetch cpu_ms peak_rss_MiB bytes_sent
before=$(cpu)
page=$(curl -fs "http://127.0.0.1:$port/api/runs/$id")
total=$(grep -o '"tasks_total":[0-9]*' <<<"$page" | cut -d: -f2)
printf '%-28s %10.0f %12.0f %12s\n' "from=0, the run's first" "$(echo "$(cpu) - $before" | bc -l)" "$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")" "${#page}"
for from in 0 $((total / 2)); do
	for ((i = 0; i < count; i++)); do
		before=$(cpu)
		bytes=$(curl -fs -o /dev/null -w '%{size_download}' "http://127.0.0.1:$port/api/runs/$id?from=$from")
		ms=$(echo "$(cpu) - $before" | bc -l)
		if [ "$i" -eq 0 ]; then
			printf '%-28s %10.0f %12.0f %12s\n' "from=$from" "$ms" "$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")" "$bytes"
			sum=0
		else
			sum=$(echo "$sum + $ms" | bc -l)
		fi
	done
	[ "$count" -gt 1 ] && printf '%-28s %10.1f %12.0f %12s\n' "from=$from, next $((count - 1)) (mean)" "$(echo "$sum / ($count - 1)" | bc -l)" "$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")" "$bytes"
done
