#!/usr/bin/env bash
# Resident memory of spool daemon per format: idle; paused halfway and after the idle release
# of that pause; the peak over the whole play; at the end (stopped) and after the release of
# that stop; beside it the peak of gst-play-1.0 and mpv playing the same file.
#   bench/memory.sh [seconds-of-audio] [formats...]   (default 20; mp3 flac vorbis opus m4a wav)
# Each spool row is a fresh daemon on a private bus playing one local stereo tone into
# $SINK, read from /proc (VmHWM: peak, VmRSS: now).
# SPOOL=path measures that binary (default: the release build as `make build` makes it).
# RELEASE_AFTER (default 2s) is passed as --idle-release; RELEASE_AFTER= (empty) leaves it
# out and the pause and release columns empty (for a binary without the idle release).
# OTHERS=0 leaves out gst-play-1.0 and mpv. SINK (default `fakesink sync=true`) is the audio
# sink of every player, e.g. SINK=pulsesink with PULSE_SERVER set.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
formats=${*:-mp3 flac vorbis opus m4a wav}
release_after=${RELEASE_AFTER-2s}
sink=${SINK:-fakesink sync=true}
. bench/lib/common.sh
bench_setup

buffers=$((seconds * 44100 / 1024))
encode() {  # format file
  local tail
  tail=$(encoder_chain $1)
  gst-launch-1.0 -q audiotestsrc num-buffers=$buffers freq=440 ! audio/x-raw,rate=44100,channels=2 ! audioconvert ! $tail ! filesink location="$2"
}
extension() { case $1 in vorbis|opus) echo ogg ;; *) echo "$1" ;; esac; }

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
mpris() {
  dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 "$@" >/dev/null
}

# Starts a daemon on a fresh private bus; sets $daemon to its pid.
start_daemon() {
  rm -rf "$work/xdg" "$work/status"
  export XDG_CACHE_HOME=$work/xdg/cache XDG_STATE_HOME=$work/xdg/state XDG_CONFIG_HOME=$work/xdg/config
  dbus-daemon --session --fork --nopidfile --address="unix:dir=$work" --print-address=3 3>"$work/bus"
  export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$work/bus")
  local extra=()
  [ -z "$release_after" ] || extra=(--idle-release "$release_after")
  "$SPOOL" daemon --audio-sink "$sink" "${extra[@]}" 2>"$work/spool.err" &
  daemon=$!
  until mpris org.freedesktop.DBus.Peer.Ping 2>/dev/null; do
    kill -0 $daemon 2>/dev/null || { echo "spool daemon exited: $(cat "$work/spool.err")" >&2; exit 1; }
    sleep 0.05
  done
}
stop_daemon() {
  mpris org.mpris.MediaPlayer2.Quit
  wait $daemon || true
  pkill -f "address=unix:dir=$work" || true
}

# Idle: a daemon that has played nothing, 3 s after it answered.
start_daemon
sleep 3
idle=$(status_kib $daemon VmRSS)
stop_daemon
echo "idle daemon: $(mib "$idle") MiB"
echo
echo "$seconds s of audio, peak RSS (MiB):"
echo "| format | spool paused | released paused | spool peak | at the end | released stopped | gst-play-1.0 peak | mpv peak |"
echo "|---|---|---|---|---|---|---|---|"

releases() { grep -c "released the pipeline" "$work/spool.err" || true; }
position() {
  dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 \
    org.freedesktop.DBus.Properties.Get string:org.mpris.MediaPlayer2.Player string:Position | awk '/int64/ { print $NF }'
}
maxrss_of() {
  /usr/bin/python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

for format in $formats; do
  file="$work/a.$(extension "$format")"
  encode "$format" "$file"
  start_daemon
  stdbuf -oL playerctl -p spool status --follow >"$work/status" 2>/dev/null &
  follower=$!
  until [ -s "$work/status" ]; do sleep 0.05; done
  mpris org.mpris.MediaPlayer2.Player.OpenUri "string:file://$file"
  until grep -q Playing "$work/status"; do sleep 0.1; done
  paused="—" released_paused="—"
  if [ -n "$release_after" ]; then
    until [ "$(position)" -ge $((seconds * 500000)) ]; do sleep 0.1; done
    mpris org.mpris.MediaPlayer2.Player.Pause
    sleep 1
    paused=$(mib "$(status_kib $daemon VmRSS)")
    until [ "$(releases)" -ge 1 ]; do sleep 0.1; done
    sleep 0.5
    released_paused=$(mib "$(status_kib $daemon VmRSS)")
    mpris org.mpris.MediaPlayer2.Player.Play
  fi
  until [ "$(tail -n1 "$work/status")" = Stopped ]; do
    kill -0 $daemon 2>/dev/null || { echo "spool daemon exited while playing: $(cat "$work/spool.err")" >&2; exit 1; }
    sleep 0.1
  done
  kill "$follower"; wait "$follower" 2>/dev/null || true
  peak=$(status_kib $daemon VmHWM)
  ended=$(status_kib $daemon VmRSS)
  released="—"
  if [ -n "$release_after" ]; then
    until [ "$(releases)" -ge 2 ]; do sleep 0.1; done
    sleep 0.5
    released=$(mib "$(status_kib $daemon VmRSS)")
  fi
  libav=""
  if grep -q libavcodec "/proc/$daemon/maps"; then libav=" (libavcodec mapped)"; fi
  stop_daemon
  gst="—" mpv="—"
  if [ "${OTHERS:-1}" = 1 ]; then
    gst=$(mib "$(maxrss_of gst-play-1.0 -q --no-interactive --audiosink="$sink" "$file")")
    mpv="not installed"
    if command -v mpv >/dev/null; then
      mpv=$(mib "$(maxrss_of mpv --no-video --ao=null --no-config --really-quiet "$file")")
    fi
  fi
  echo "| $format | $paused | $released_paused | $(mib "$peak")$libav | $(mib "$ended") | $released | $gst | $mpv |"
done
