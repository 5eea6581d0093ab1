#!/usr/bin/env bash
# CPU seconds per minute of audio and peak resident memory while playing, side
# by side in one run: spool daemon, gst-play-1.0 and mpv (when installed) on the
# same file, each into a null output that keeps real time.
#   bench/playback-cost.sh [seconds-of-audio]   (default 30; needs a release build)
# SPOOL="old/spool new/spool" measures those binaries instead, one row each.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -z "${SPOOL:-}" ]; then
  # As `make build` builds it (static Swift runtime).
  swift build -c release --static-swift-stdlib --product spool >/dev/null
  SPOOL=$PWD/.build/release/spool
fi

# The registry every player here uses, wherever XDG_CACHE_HOME points later.
export GST_REGISTRY=${GST_REGISTRY:-${XDG_CACHE_HOME:-$HOME/.cache}/gstreamer-1.0/registry.$(uname -m).bin}

# A tone of the asked length, as FLAC and MP3.
buffers=$((seconds * 44100 / 1024))
gst-launch-1.0 -q audiotestsrc num-buffers=$buffers freq=440 ! audioconvert ! flacenc ! filesink location="$work/a.flac"
gst-launch-1.0 -q audiotestsrc num-buffers=$buffers freq=440 ! audioconvert ! lamemp3enc ! xingmux ! filesink location="$work/a.mp3"

# Runs a command and prints "cpu_seconds max_rss_kib" of it and its children; its stderr passes through.
measure() {
  /usr/bin/python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{usage.ru_utime + usage.ru_stime:.3f} {usage.ru_maxrss}")' "$@"
}

# spool: a private bus, the daemon under `measure`, playback started over D-Bus,
# Quit once the track has ended. The end is awaited through PropertiesChanged
# (`playerctl --follow`), not by asking for the status: polling GetAll five times
# a second cost the daemon about 15% of its CPU, which is no part of playing.
play_with_spool() {
  local spool=$1 file=$2
  # Its own cache and state: another daemon on this machine may hold ~/.cache/spool. GStreamer's
  # registry stays the user's one (GST_REGISTRY, set above), as for gst-play: a fresh one would
  # be rebuilt by a plugin scan inside the measured run.
  rm -rf "$work/xdg"
  export XDG_CACHE_HOME=$work/xdg/cache XDG_STATE_HOME=$work/xdg/state
  dbus-daemon --session --fork --nopidfile --address="unix:dir=$work" --print-address=3 3>"$work/bus"
  export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$work/bus")
  measure "$spool" daemon --audio-sink "fakesink sync=true" >"$work/spool.cost" 2>"$work/spool.err" &
  local runner=$!
  until dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 \
      org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1; do
    kill -0 $runner 2>/dev/null || { echo "spool daemon exited before it answered: $(cat "$work/spool.err")" >&2; exit 1; }
    sleep 0.05
  done
  stdbuf -oL playerctl -p spool status --follow >"$work/status" 2>/dev/null &
  local follower=$!
  until [ -s "$work/status" ]; do sleep 0.05; done  # following before the track starts
  dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 \
    org.mpris.MediaPlayer2.Player.OpenUri "string:file://$file" >/dev/null
  until grep -q Playing "$work/status"; do sleep 0.1; done
  until [ "$(tail -n1 "$work/status")" = Stopped ]; do
    kill -0 $runner 2>/dev/null || { echo "spool daemon exited while playing: $(cat "$work/spool.err")" >&2; exit 1; }
    sleep 0.1
  done
  kill "$follower"; wait "$follower" 2>/dev/null || true
  dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 org.mpris.MediaPlayer2.Quit >/dev/null
  wait $runner
  pkill -f "address=unix:dir=$work" || true
  cat "$work/spool.cost"
}

row() {
  local name=$1 cost=$2
  read -r cpu rss <<<"$cost"
  awk -v n="$name" -v c="$cpu" -v r="$rss" -v s="$seconds" \
    'BEGIN { printf "| %s | %.2f s | %.1f MiB |\n", n, c * 60 / s, r / 1024 }'
}

for format in flac mp3; do
  file="$work/a.$format"
  echo
  echo "$format, $seconds s of audio:"
  echo "| player | CPU per minute of audio | peak RSS |"
  echo "|---|---|---|"
  for spool in $SPOOL; do
    label="spool daemon"
    [ "$SPOOL" = "$spool" ] || label="spool daemon ($spool)"
    cost=$(play_with_spool "$spool" "$file")  # an assignment, so that a failed run stops the script
    row "$label" "$cost"
  done
  row "gst-play-1.0" "$(measure gst-play-1.0 -q --no-interactive --audiosink='fakesink sync=true' "$file" 2>/dev/null)"
  if command -v mpv >/dev/null; then
    row "mpv --no-video --ao=null" "$(measure mpv --no-video --ao=null --no-config --really-quiet "$file" 2>/dev/null)"
  else
    echo "| mpv | not installed | |"
  fi
done
