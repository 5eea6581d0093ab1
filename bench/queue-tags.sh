#!/usr/bin/env bash
# Cost of reading ahead the tags of queued local files. A fresh spool daemon on a private bus
# plays a local MP3 of SECONDS s into $SINK; COUNT short tagged files (MP3, FLAC, Ogg Vorbis,
# Opus, M4A, WAV in turn) are queued behind it, and their tags are read while it plays. Prints
# each read's time (from the daemon's debug log), and the daemon's peak (VmHWM) and current
# (VmRSS) resident memory halfway through the play, beside the same play with nothing queued.
#   bench/queue-tags.sh [count] [seconds]   (default 20 files, 20 s)
# SPOOL=path measures that binary (default: the release build as `make build` makes it).
# SINK (default `fakesink sync=true`) is the audio sink. FORMATS (default "mp3 flac ogg opus m4a
# wav") are the queued files' formats, in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-20}
seconds=${2:-20}
sink=${SINK:-fakesink sync=true}
. bench/lib/common.sh
bench_setup

tone() {  # buffers format file
  local tail
  tail=$(encoder_chain $2)
  gst-launch-1.0 -q audiotestsrc num-buffers="$1" freq=440 ! audio/x-raw,rate=44100,channels=2 ! audioconvert \
    ! taginject tags="title=Queued $3,artist=Bench,album=Queue" ! $tail ! filesink location="$work/$3"
}
tone $((seconds * 44100 / 1024)) mp3 playing.mp3
read -r -a formats <<<"${FORMATS:-mp3 flac ogg opus m4a wav}"
uris=()
for i in $(seq 1 "$count"); do
  format=${formats[$(((i - 1) % ${#formats[@]}))]}
  tone 150 "$format" "queued-$i.$format"
  uris+=("file://$work/queued-$i.$format")
done

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
call() { dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 "$@"; }
position() { call org.freedesktop.DBus.Properties.Get string:org.mpris.MediaPlayer2.Player string:Position | awk '/int64/ { print $NF }'; }

run() {  # queued-count
  rm -rf "$work/xdg"
  export XDG_CACHE_HOME=$work/xdg/cache XDG_STATE_HOME=$work/xdg/state XDG_CONFIG_HOME=$work/xdg/config
  dbus-daemon --session --fork --nopidfile --address="unix:dir=$work" --print-address=3 3>"$work/bus"
  export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$work/bus")
  SPOOL_LOG=debug "$SPOOL" daemon --audio-sink "$sink" 2>"$work/spool.err" &
  local daemon=$!
  until call org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1; do sleep 0.05; done
  call org.mpris.MediaPlayer2.Player.OpenUri "string:file://$work/playing.mp3" >/dev/null
  if [ "$1" -gt 0 ]; then
    local list
    list=$(IFS=,; echo "${uris[*]:0:$1}")
    call org.spool.Spool1.Add "array:string:$list" >/dev/null
  fi
  until [ "$(grep -c 'read ahead' "$work/spool.err" || true)" -ge "$1" ] && [ "$(position)" -ge $((seconds * 500000)) ]; do
    kill -0 $daemon 2>/dev/null || { echo "spool daemon exited: $(cat "$work/spool.err")" >&2; exit 1; }
    sleep 0.1
  done
  echo "| $1 queued | $(mib "$(status_kib $daemon VmHWM)") | $(mib "$(status_kib $daemon VmRSS)") |"
  if [ "$1" -gt 0 ]; then
    grep 'read ahead' "$work/spool.err" | sed -E 's/.*read ahead ([^:]*): (.*)/  \1: \2/' >"$work/reads"
  fi
  call org.mpris.MediaPlayer2.Quit >/dev/null
  wait $daemon || true
  pkill -f "address=unix:dir=$work" || true
}

echo "| run | peak RSS (MiB) | RSS halfway (MiB) |"
echo "|---|---|---|"
run 0
run "$count"
echo
echo "reads:"
cat "$work/reads"
