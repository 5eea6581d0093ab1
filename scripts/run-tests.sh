#!/usr/bin/env bash
# Runs every test and, when one fails, repeats its failure lines at the end: CI keeps
# only the tail of a run's output, and a Swift Testing failure is printed where the
# test ran, often hundreds of lines before the summary.
set -uo pipefail
cd "$(dirname "$0")/.."
log=.build/test-output.log
mkdir -p .build
"${SWIFT:-swift}" test --skip-build --no-parallel "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
	echo
	echo "=== what failed (whole output in $log) ==="
	grep -E '✘|recorded an issue|error:|Fatal error|Crash' "$log" | grep -v '^✘ Test run with' | head -60
fi
exit "$status"
