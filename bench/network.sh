#!/usr/bin/env bash
# Spool under network conditions (issue #12): open → first audio, open → advancing, seeks,
# chunked and Range-less origins, against a capped link; mpv with mpv-mpris in the same run
# when installed. Builds spool and the bench in release mode (as `make build` does), then runs it.
#   bench/network.sh
# SPOOL=path/to/spool measures another binary; NETBENCH_PLAYERS=spool leaves mpv out;
# NETBENCH_LOG=debug gives the daemons a debug log (shown for failed cases).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --static-swift-stdlib --product spool >/dev/null
swift build -c release --static-swift-stdlib --product NetworkBench >/dev/null
exec .build/release/NetworkBench network "$@"
