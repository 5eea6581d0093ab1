#!/usr/bin/env bash
# Runs every test, in three steps: first every test not listed in scripts/serial-tests, in
# parallel, twice as many at once as there are cores (most of a test's time is a daemon
# playing in real time, so the cores are half idle at one per core; at four per core the tests
# that block a thread starved the others: see below); then the listed ones that listen in real time, in the paced lanes side by side, one
# test at a time in each (such a test mostly waits: three of them bend nothing the others
# measure, while the parallel lane's load would); last those that time replies to 100 ms, alone. The parallel lane works only while tests wait
# as tasks: the Swift executor keeps about one thread per core and adds none for a blocked one,
# so a test blocking a thread stalls the tests beside it (TestSupport's waits await, and its
# blocking ones run on threads of their own).
# When some fail, their failure lines are repeated at the end (CI keeps only the tail of a
# run's output, and Swift Testing prints a failure where the test ran), and the failed tests
# run once more on their own, to tell a race from a plain failure: one that passes then is
# named FLAKY, loudly, and fails the run all the same (a race hidden by a rerun is still a race).
# GStreamer's plugin registry is built once, into .build, and shared by the test process and
# every daemon it starts: each daemon has a private, empty XDG_CACHE_HOME, where GStreamer
# would otherwise rebuild it (~0.5 s a daemon).
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
log=.build/test-output.log
mkdir -p .build
# The patterns of scripts/serial-tests in lane $1 ("all": every lane), as one regex.
patterns() {
	sed -e 's/#.*//' scripts/serial-tests | awk -v lane="$1" 'NF && (lane == "all" || $2 == lane) { print $1 }' |
		paste -sd'|'
}
serial=$(patterns all)
width=${TEST_WIDTH:-$(($(nproc) * 2))}
paced_lanes=$(sed -e 's/#.*//' scripts/serial-tests | awk '$2 ~ /^paced-/ { print $2 }' | sort -u)

export GST_REGISTRY="$PWD/.build/gst-registry-$(uname -m).bin"
# Each test's daemons leave their logs here (TestSupport's ChildProcess.keepLog), for the
# failure summary below.
export SPOOL_TEST_LOGS="$PWD/.build/test-logs"
rm -rf "$SPOOL_TEST_LOGS"
gst-inspect-1.0 coreelements >/dev/null 2>&1 || true

started=$(date +%s)
SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$width \
	"$swift" test --skip-build "$@" --skip "($serial)" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
parallel_seconds=$(($(date +%s) - started))

# The paced lanes side by side (SwiftPM's lock would queue all but one: nothing is built
# here, so it is skipped), each into a log of its own, shown whole once all end.
serial_status=0
paced_started=$(date +%s)
for lane in $paced_lanes; do
	(
		lane_started=$(date +%s)
		"$swift" test --skip-build --ignore-lock --no-parallel "$@" --filter "($(patterns $lane))" \
			>".build/test-output-$lane.log" 2>&1
		echo $? >".build/test-status-$lane"
		echo "=== $lane: $(($(date +%s) - lane_started)) s ===" >>".build/test-output-$lane.log"
	) &
done
wait
for lane in $paced_lanes; do
	tee -a "$log" <".build/test-output-$lane.log"
	[ "$(cat ".build/test-status-$lane")" -ne 0 ] && serial_status=1
done
paced_seconds=$(($(date +%s) - paced_started))

alone_started=$(date +%s)
"$swift" test --skip-build --no-parallel "$@" --filter "($(patterns alone))" 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -ne 0 ] && serial_status=1
echo "=== parallel lane ($width at once): ${parallel_seconds} s; paced lanes: ${paced_seconds} s;" \
	"alone: $(($(date +%s) - alone_started)) s ==="
[ "$serial_status" -ne 0 ] && status=$serial_status
[ "$status" -eq 0 ] && exit 0

echo
echo "=== what failed (whole output in $log) ==="
grep -E '✘|recorded an issue|error:|Fatal error|Crash' "$log" | grep -v '^✘ Test run with' | head -60
if grep -q 'Program crashed' "$log"; then
	# Last, as CI shows only the tail: the crashed thread's frames and the tests still running.
	echo
	echo "=== the test process crashed ==="
	grep -m1 'Program crashed' "$log"
	awk '/^Thread [0-9]+ .*crashed:/ { on = 1 } on && /^Registers:/ { exit } on && NF { print; if (++n == 24) exit }' "$log"
	echo "tests started and not finished:"
	awk '/^◇ Test [^ ]+ started\./ { open[$3] = 1 } /^(✔|✘) Test [^ ]+ / { delete open[$3] }
		END { for (t in open) print "  " t }' "$log"
	exit "$status"
fi
# The functions of the failed tests; none when the run itself broke (a crash, a build error).
failed=$(grep -E '^✘ Test [A-Za-z_][A-Za-z0-9_]*\(.* failed after' "$log" | sed -E 's/^✘ Test ([A-Za-z0-9_]+)\(.*/\1/' | sort -u)
# The end of each failed test's daemon logs (at most two a test), timed lines included.
for test in $failed; do
	for kept in $(ls -t "$SPOOL_TEST_LOGS/$test("* 2>/dev/null | head -2); do
		echo
		echo "=== the last lines of a daemon of $test ($(basename "$kept")) ==="
		tail -n 30 "$kept"
	done
done
if [ -z "$failed" ] || grep -qE 'Fatal error|Program crashed|error: Exited' "$log"; then exit "$status"; fi
pattern=$(echo "$failed" | paste -sd'|')
echo
echo "=== running the failed tests again on their own: $pattern ==="
rerun=.build/test-rerun-output.log
"$swift" test --skip-build --no-parallel "$@" --filter "($pattern)\\(" 2>&1 | tee "$rerun"
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
	echo "=== failed again: ==="
	grep -E '✘|recorded an issue' "$rerun" | head -40
	exit 1
fi
echo
echo "=== FLAKY: failed in the whole run, passed on their own: $(echo "$failed" | paste -sd' ') ==="
echo "=== a test that passes only on a rerun fails the run: find the race ==="
exit 1
