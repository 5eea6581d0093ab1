#!/usr/bin/env bash
# Measures the build and test loop: clean release build, an incremental debug
# build after touching one file, and a warm `make test`. Prints a table row each.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(--explicit-target-dependency-import-check error)
seconds() { local start=$(date +%s.%N); "$@" >/dev/null 2>&1; awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }'; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
clean=$(seconds swift build -c release "${flags[@]}" --scratch-path "$scratch")
swift build "${flags[@]}" >/dev/null 2>&1
touch Sources/PlayerCore/Player.swift
incremental=$(seconds swift build "${flags[@]}")
test_time=$(seconds make test)
printf '| clean release build | %.1f s |\n' "$clean"
printf '| incremental debug build (one file touched) | %.1f s |\n' "$incremental"
printf '| make test (warm build) | %.1f s |\n' "$test_time"
