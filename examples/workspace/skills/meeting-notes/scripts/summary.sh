#!/bin/sh
# Counts a notes file's ACTION lines per person, the name in parentheses.
# It runs in the run's workspace, so a relative path is the workspace's.
set -eu
file="${1:?usage: summary.sh NOTES.md}"
echo "action items in $file:"
grep 'ACTION' "$file" | sed -n 's/.*(\(.*\)).*/\1/p' | sort | uniq -c
