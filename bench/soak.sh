#!/usr/bin/env bash
# A soak of the real daemon: every format over http (random cuts, 503s and stalls) and from
# local files, random seeks, next/previous, rates, queue edits, cache clears and pauses, four
# MPRIS clients polling; RSS, descriptors, threads and CPU sampled each second. Prints crashes,
# unanswered calls, what every action did and growth per hour after the warm-up; exits 1 when
# a target is missed. Builds spool and the bench in release mode (as `make build` does).
#   bench/soak.sh MINUTES
# SOAK_SEED=N replays a run's schedule; SOAK_CSV=path for the samples (default
# .build/soak/samples.csv); SOAK_LOG=debug for a debug log; SPOOL=path soaks another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:?usage: bench/soak.sh MINUTES}
flags=(-c release --static-swift-stdlib --explicit-target-dependency-import-check error)
swift build "${flags[@]}" --product spool >/dev/null
swift build "${flags[@]}" --product SoakBench >/dev/null
mkdir -p .build/soak
SOAK_CSV=${SOAK_CSV:-.build/soak/samples.csv} exec .build/release/SoakBench "$minutes"
