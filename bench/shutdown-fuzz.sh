#!/usr/bin/env bash
# The shutdown fuzz at length: the real daemon (debug build, as `make test` runs it) stopped
# every way it can be (SIGTERM, SIGINT, SIGHUP, MPRIS Quit, `spool quit`, its bus gone, its
# bus gone then SIGTERM) at random moments of what it does (idle, loading a slow download,
# playing, seeking, handing over, paused, paused past the idle release, its sound server gone,
# starting), each followed by a start that must restore the session. `make test` runs one cycle
# of nine; this runs RUNS (default 270) from a random seed, or SPOOL_TEST_SEED's, and prints
# each run, the stop times per kind, and the test's verdict. With SHUTDOWN_FUZZ_RELEASE=1 the
# daemon is the release build users run (`make build`: Swift's runtime and Dispatch linked
# statically), not the debug build the tests use.
#   bench/shutdown-fuzz.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-270}
seed=${SPOOL_TEST_SEED:-$((RANDOM * 32768 + RANDOM))}
swift build --build-tests --explicit-target-dependency-import-check error >/dev/null
if [ "${SHUTDOWN_FUZZ_RELEASE:-0}" = 1 ]; then
	swift build -c release --static-swift-stdlib --explicit-target-dependency-import-check error --product spool >/dev/null
	export SPOOL_TEST_EXECUTABLE="$PWD/.build/release/spool"
fi
export GST_REGISTRY="$PWD/.build/gst-registry-$(uname -m).bin"
gst-inspect-1.0 coreelements >/dev/null 2>&1 || true
echo "shutdown fuzz: $runs runs, SPOOL_TEST_SEED=$seed, ${SPOOL_TEST_EXECUTABLE:-the debug build}"
SPOOL_TEST_SEED=$seed SPOOL_SHUTDOWN_RUNS=$runs swift test --skip-build --filter ShutdownFuzzTests 2>&1 |
	grep -E 'shutdown fuzz|recorded an issue|passed after|failed after'
