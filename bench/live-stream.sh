#!/usr/bin/env bash
# A live stream keeps memory flat and writes nothing: the release daemon plays a loopback
# Icecast-like station (bench/lib/icy_station.py: a 128 kbit/s MP3 tone in a loop, in real time,
# no Content-Length, icy-metaint 16000, a new "Artist N - Title N" every 5 s of audio) into
# $SINK for MINUTES. Every 15 s its resident memory (VmRSS, and RssAnon, its anonymous part) and
# the bytes under its cache folder are sampled and printed; MPRIS's xesam:title is read every
# second. Prints the growth per minute of RSS (a least-squares line after the warm-up: the
# first 5 minutes, as the memory window of a live stream, two 2-min pause windows at the
# stream's bitrate, fills for its first 4; the first third of a run under 15 minutes) and of
# the cache, and the titles MPRIS showed. RSS is also read every second, and the line is fitted
# to those readings: the daemon trims its heap once a minute (HeapTrimmer, ±5 s) and the full
# window drops a sixteenth of itself each 15 s at 128 kbit/s, a sawtooth of ~1 MiB that samples
# 15 s apart alias into a false slope (that fit is printed too; a 20-min run read +24 KiB/min
# there while smaps_rollup grew 3 KiB/min). mpv, when installed, plays the same station beside
# it and is read the same way, for the ratio of the two growths.
#   bench/live-stream.sh [MINUTES]   (default $LIVE_MINUTES, else 20)
# Exits 1 when the daemon exits or is not playing at the end, when its RSS grows more than
# 16 KiB/min after the warm-up (judged when the warm-up covers the window's filling: runs of 12
# minutes or more; shorter ones print the figure unjudged), or when the cache folder holds any
# byte beyond its index (index.sqlite and its -wal, -shm, -journal; and the lock file) more
# than at the start. The daemon's log goes through a pipe, so that /proc/PID/io's write_bytes
# (printed, with the files the daemon changed during the run) counts only what the daemon
# itself writes to storage.
# SPOOL=path measures that binary (default: the release build as `make build` makes it).
# OTHERS=0 leaves mpv out. SINK (default `fakesink sync=true`) is spool's audio sink (mpv plays
# into --ao=null, which keeps real time). LIVE_CSV=path.csv keeps the samples (t in s, KiB,
# bytes) and, as path.rss.csv, the per-second RSS readings. LIVE_INTERVAL (default 15) is the
# seconds between samples. LIVE_BURST (default 65536, Icecast's default burst-size) is how many
# bytes behind the live point a listener starts.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-${LIVE_MINUTES:-20}}
interval=${LIVE_INTERVAL:-15}
sink=${SINK:-fakesink sync=true}
# Icecast's default burst-size: a new listener starts 64 KiB behind the live point.
burst=${LIVE_BURST:-65536}
kbps=128
. bench/lib/common.sh
bench_setup

duration=$((minutes * 60))
# The warm-up: 5 min, or the first third of a shorter run. The window (2 × 120 s of audio) is
# full 240 s after the first byte; RSS is judged only when the warm-up lasts that long.
warmup=$((duration / 3 < 300 ? duration / 3 : 300))
window_fill=240

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
mpris() {
  dbus-send --session --print-reply --dest=org.mpris.MediaPlayer2.spool /org/mpris/MediaPlayer2 "$@"
}
property() {  # name: the Player property's value as dbus-send prints it (last word of its line)
  mpris org.freedesktop.DBus.Properties.Get string:org.mpris.MediaPlayer2.Player "string:$1" 2>/dev/null |
    awk 'NR > 1 { print $NF; exit }' | tr -d '"'
}
title() {  # xesam:title in the Player's Metadata, empty when none
  mpris org.freedesktop.DBus.Properties.Get string:org.mpris.MediaPlayer2.Player string:Metadata 2>/dev/null |
    awk '/"xesam:title"/ { getline; sub(/^[^"]*"/, ""); sub(/"[[:space:]]*$/, ""); print; exit }'
}
# Bytes of the regular files under a folder: "index other", index being the cache's index
# (index.sqlite and its -wal, -shm, -journal) and its lock file (the owner's pid).
folder_bytes() {
  find "$1" -type f -printf '%f %s\n' 2>/dev/null |
    awk '{ if ($1 ~ /^index\.sqlite/ || $1 == "lock") i += $2; else o += $2 } END { printf "%d %d\n", i, o }'
}
now() { date +%s.%N; }
read_status() {  # pid: sets st_rss and st_anon (KiB) from its status, empty once it is gone
  st_rss="" st_anon=""
  local key value rest
  while read -r key value rest; do
    case $key in VmRSS:) st_rss=$value ;; RssAnon:) st_anon=$value ;; esac
  done 2>/dev/null <"/proc/$1/status" || true
}

# The station: a 30-s CBR MP3 with no tags, so its end joins its start on a frame boundary.
gst-launch-1.0 -q audiotestsrc num-buffers=$((30 * 44100 / 1024)) freq=440 ! audio/x-raw,rate=44100,channels=2 \
  ! audioconvert ! lamemp3enc target=bitrate bitrate=$kbps cbr=true ! filesink location="$work/station.mp3"
/usr/bin/python3 bench/lib/icy_station.py "$work/station.mp3" --bitrate $kbps --metaint 16000 --title-every 5 \
  --burst "$burst" --port-file "$work/port" 2>"$work/station.log" &
station=$!
until [ -s "$work/port" ]; do
  kill -0 $station 2>/dev/null || { echo "the station exited: $(cat "$work/station.log")" >&2; exit 1; }
  sleep 0.05
done
port=$(cat "$work/port")

# The daemon on a private bus, with its own XDG folders.
export XDG_CACHE_HOME=$work/xdg/cache XDG_STATE_HOME=$work/xdg/state XDG_CONFIG_HOME=$work/xdg/config
dbus-daemon --session --fork --nopidfile --address="unix:dir=$work" --print-address=3 3>"$work/bus"
export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$work/bus")
"$SPOOL" daemon --audio-sink "$sink" 2> >(cat >"$work/spool.err") &
daemon=$!
until mpris org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1; do
  kill -0 $daemon 2>/dev/null || { echo "spool daemon exited: $(cat "$work/spool.err")" >&2; exit 1; }
  sleep 0.05
done
cache=$XDG_CACHE_HOME
mpris org.mpris.MediaPlayer2.Player.OpenUri "string:http://127.0.0.1:$port/spool.mp3" >/dev/null
deadline=$(($(date +%s) + 30))
until [ "$(property PlaybackStatus)" = Playing ]; do
  kill -0 $daemon 2>/dev/null || { echo "spool daemon exited: $(tail -n 20 "$work/spool.err")" >&2; exit 1; }
  [ "$(date +%s)" -lt $deadline ] || { echo "not playing 30 s after OpenUri: $(tail -n 20 "$work/spool.err")" >&2; exit 1; }
  sleep 0.1
done

# xesam:title every second, one line per change.
(
  last=""
  while kill -0 $daemon 2>/dev/null; do
    shown=$(title || true)
    if [ -n "$shown" ] && [ "$shown" != "$last" ]; then echo "$(date +%s) $shown"; last=$shown; fi
    sleep 1
  done
) >"$work/titles" &
titles_poller=$!

mpv=""
if [ "${OTHERS:-1}" = 1 ] && command -v mpv >/dev/null; then
  mkdir -p "$work/mpv/cache" "$work/mpv/config" "$work/mpv/state"
  XDG_CACHE_HOME=$work/mpv/cache XDG_CONFIG_HOME=$work/mpv/config XDG_STATE_HOME=$work/mpv/state \
    mpv --no-config --no-video --ao=null --really-quiet --ytdl=no --input-terminal=no \
    "http://127.0.0.1:$port/mpv.mp3" </dev/null >"$work/mpv.out" 2>&1 &
  mpv=$!
fi

position_start=$(property Position)
touch "$work/started"
# CPU seconds (user + system) a process has used: fields 14 and 15 of /proc/PID/stat, in ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_start=$(cpu_ticks $daemon)
[ -z "$mpv" ] || mpv_cpu_start=$(cpu_ticks $mpv)
started=$(now)
echo "spool ($SPOOL) playing http://127.0.0.1:$port/spool.mp3 (${kbps} kbit/s, icy-metaint 16000," \
  "a title every 5 s) into '$sink' for $minutes min, sampled every $interval s; warm-up $((warmup / 60)) min $((warmup % 60)) s${mpv:+; mpv beside it}"
echo
echo "| t (min) | spool RSS (MiB) | of it anonymous | cache: index / other (bytes) | written by spool (KiB) |${mpv:+ mpv RSS (MiB) |}"
echo "|---|---|---|---|---|${mpv:+---|}"
csv=$work/samples.csv fine=$work/rss.csv
echo "t,rss_kib,anon_kib,cache_index,cache_other,mpv_rss_kib,mpv_anon_kib,write_bytes" >"$csv"
echo "t,rss_kib,anon_kib,mpv_rss_kib,mpv_anon_kib" >"$fine"
failed=()
start_us=${EPOCHREALTIME/./}
for ((t = 0; t <= duration; t++)); do
  delay=$((start_us + t * 1000000 - ${EPOCHREALTIME/./}))
  [ $delay -le 0 ] || sleep "$(printf '%d.%06d' $((delay / 1000000)) $((delay % 1000000)))"
  if ! kill -0 $daemon 2>/dev/null; then
    failed+=("the daemon exited after $t s")
    break
  fi
  read_status $daemon
  rss=$st_rss anon=$st_anon mpv_rss="" mpv_anon=""
  if [ -n "$mpv" ]; then
    read_status $mpv
    mpv_rss=$st_rss mpv_anon=$st_anon
  fi
  echo "$t,$rss,$anon,$mpv_rss,$mpv_anon" >>"$fine"
  [ $t -ne $warmup ] || cp "/proc/$daemon/smaps_rollup" "$work/smaps.warm" 2>/dev/null || true
  ((t % interval == 0)) || continue
  read -r index other < <(folder_bytes "$cache")
  written=$(awk '$1 == "write_bytes:" { print $2 }' "/proc/$daemon/io" 2>/dev/null || echo 0)
  echo "$t,$rss,$anon,$index,$other,$mpv_rss,$mpv_anon,$written" >>"$csv"
  row="| $(awk -v t=$t 'BEGIN { printf "%.2f", t / 60 }') | $(mib "$rss") | $(mib "$anon") | $index / $other | $((written / 1024)) |"
  [ -z "$mpv" ] || row+=" $(mib "${mpv_rss:-0}") |"
  echo "$row"
done
ended=$(now)
ticks=$(getconf CLK_TCK)
cpu_line="CPU per minute of listening: spool $(awk -v a="$cpu_start" -v b="$(cpu_ticks $daemon)" -v m="$minutes" -v k="$ticks" 'BEGIN { printf "%.2f", (b - a) / k / m }') s"
[ -z "$mpv" ] || cpu_line+="; mpv $(awk -v a="$mpv_cpu_start" -v b="$(cpu_ticks $mpv)" -v m="$minutes" -v k="$ticks" 'BEGIN { printf "%.2f", (b - a) / k / m }') s"
cp "/proc/$daemon/smaps_rollup" "$work/smaps.end" 2>/dev/null || true
status=$(property PlaybackStatus || true)
position_end=$(property Position || true)
kill $titles_poller 2>/dev/null || true
wait $titles_poller 2>/dev/null || true
[ -z "$mpv" ] || { kill $mpv 2>/dev/null || true; }
[ -z "${LIVE_CSV:-}" ] || { cp "$csv" "$LIVE_CSV"; cp "$fine" "${LIVE_CSV%.csv}.rss.csv"; }
echo

# Figures and the checks.
elapsed=$(awk -v s="$started" -v e="$ended" 'BEGIN { printf "%.0f", e - s }')
if kill -0 $daemon 2>/dev/null; then
  advanced=$(awk -v a="${position_start:-0}" -v b="${position_end:-0}" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')
  echo "spool at the end: $status; position advanced $advanced s in $elapsed s"
  [ "$status" = Playing ] || failed+=("the daemon is $status at the end, not Playing")
fi
echo "$cpu_line"
seen=$(cut -d' ' -f2- "$work/titles" | grep -c '^Title [0-9]*$' || true)
distinct=$(cut -d' ' -f2- "$work/titles" | grep '^Title [0-9]*$' | sort -u | wc -l)
spool_connections=$(grep -c ' open path=/spool.mp3 ' "$work/station.log" || true)
spool_conns=$(grep ' open path=/spool.mp3 ' "$work/station.log" | awk '{ print $3 }' | paste -sd' ')
sent=0
for c in $spool_conns; do sent=$((sent + $(grep -c " conn $c title " "$work/station.log" || true))); done
echo "titles seen in MPRIS: $seen of the station's ($distinct distinct; first $(grep -m1 ' Title [0-9]*$' "$work/titles" |
  cut -d' ' -f2-), last $(grep ' Title [0-9]*$' "$work/titles" | tail -n1 | cut -d' ' -f2-); before them" \
  "'$(head -n1 "$work/titles" | cut -d' ' -f2-)'); the station sent $sent titles to spool over" \
  "$spool_connections connection(s)"
echo "files the daemon changed during the run: $(find "$work/xdg" -type f -newer "$work/started" -printf '%P (%s bytes) ' |
  sed 's/ $//')"
[ -z "$mpv" ] || echo "mpv: $(grep -c ' open path=/mpv.mp3 ' "$work/station.log" || true) connection(s) to the station;" \
  "its cache folder holds $(du -sb "$work/mpv/cache" | cut -f1) bytes"

set +e
/usr/bin/python3 - "$csv" "$fine" "$warmup" "$window_fill" <<'EOF'
import csv, sys

rows = list(csv.DictReader(open(sys.argv[1])))
fine = list(csv.DictReader(open(sys.argv[2])))
warmup, window_fill = int(sys.argv[3]), int(sys.argv[4])
if len(rows) < 2:
    print("too few samples"); sys.exit(1)

def column(name, rows=rows):
    return [(int(r["t"]), float(r[name])) for r in rows if r[name] != ""]

def fit(points):
    """Slope per minute and its standard error of a least-squares line over (t s, value)."""
    n = len(points)
    if n < 3:
        return None, None
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    slope = sum((t - mx) * (v - my) for t, v in points) / sxx
    residual = sum((v - my - slope * (t - mx)) ** 2 for t, v in points)
    error = (residual / (n - 2) / sxx) ** 0.5
    return slope * 60, error * 60

def after(points):
    return [(t, v) for t, v in points if t >= warmup]

failed = False
rss, anon = column("rss_kib", fine), column("anon_kib", fine)
slope, error = fit(after(rss))
anon_slope, _ = fit(after(anon))
coarse_slope, coarse_error = fit(after(column("rss_kib")))
warm = after(rss)
print(f"spool RSS: {rss[0][1] / 1024:.1f} MiB at the start, {rss[-1][1] / 1024:.1f} MiB at the end "
      f"(peak {max(v for _, v in rss) / 1024:.1f}); anonymous {anon[0][1] / 1024:.1f} -> {anon[-1][1] / 1024:.1f} MiB")
if slope is None:
    print("spool RSS growth: too few samples after the warm-up")
else:
    judged = warmup >= window_fill
    verdict = ("ok" if slope <= 16 else "MISSED") if judged else \
        f"not judged: the warm-up ({warmup} s) ends before the window is full ({window_fill} s)"
    low, high = min(v for _, v in warm), max(v for _, v in warm)
    print(f"spool RSS growth after the warm-up ({warmup / 60:.1f} min; {len(warm)} readings, one a second, "
          f"{warm[0][1] / 1024:.1f} -> {warm[-1][1] / 1024:.1f} MiB, between {low / 1024:.1f} and {high / 1024:.1f}): "
          f"{slope:+.1f} ± {error:.1f} KiB/min (anonymous {anon_slope:+.1f}; over the 15-s samples alone "
          + (f"{coarse_slope:+.1f} ± {coarse_error:.1f}" if coarse_slope is not None else "too few")
          + f"); target ≤ 16 KiB/min: {verdict}")
    failed |= judged and slope > 16

index, other = column("cache_index"), column("cache_other")
total = [(t, i + o) for (t, i), (_, o) in zip(index, other)]
cache_slope, _ = fit(total)
grown = max(v for _, v in other) - other[0][1]
print(f"cache folder: index {int(index[0][1])} -> {int(index[-1][1])} bytes, other files "
      f"{int(other[0][1])} -> {int(other[-1][1])} bytes (most {int(max(v for _, v in other))}); "
      f"growth {cache_slope if cache_slope is not None else 0:+.0f} bytes/min over the run; "
      f"target: nothing beyond the index: {'ok' if grown <= 0 else 'MISSED'}")
failed |= grown > 0
written = column("write_bytes")
write_slope, _ = fit(written)
print(f"bytes the daemon caused to be written to storage (/proc/PID/io write_bytes) during the run: "
      f"{int(written[-1][1] - written[0][1])} ({(write_slope or 0) / 1024:.1f} KiB/min; the cache's are counted above)")

mpv = column("mpv_rss_kib", fine)
if mpv:
    mpv_slope, mpv_error = fit(after(mpv))
    mpv_warm = after(mpv)
    print(f"mpv RSS: {mpv[0][1] / 1024:.1f} MiB at the start, {mpv[-1][1] / 1024:.1f} MiB at the end "
          f"(peak {max(v for _, v in mpv) / 1024:.1f})")
    if mpv_slope is not None:
        print(f"mpv RSS growth after the warm-up ({mpv_warm[0][1] / 1024:.1f} -> {mpv_warm[-1][1] / 1024:.1f} MiB): "
              f"{mpv_slope:+.1f} ± {mpv_error:.1f} KiB/min")
        if slope is not None:
            ratio = f"{slope / mpv_slope:.3f}" if mpv_slope > 0 else "n/a (mpv does not grow)"
            print(f"spool / mpv RSS growth per minute: {ratio}; RSS at the end {rss[-1][1] / mpv[-1][1]:.2f}")
sys.exit(1 if failed else 0)
EOF
checked=$?
set -e

if [ -s "$work/smaps.warm" ] && [ -s "$work/smaps.end" ]; then
  echo "spool smaps_rollup after the warm-up -> at the end (KiB):" \
    "$(awk 'NR == FNR { a[$1] = $2; next } $1 in a && $1 ~ /^(Rss|Pss_Anon|Pss_File|Shared_Clean|Private_Clean|Private_Dirty|Anonymous|Swap):$/ { printf "%s %d -> %d; ", $1, a[$1], $2 }' \
      "$work/smaps.warm" "$work/smaps.end")"
fi

if kill -0 $daemon 2>/dev/null; then
  mpris org.mpris.MediaPlayer2.Quit >/dev/null || true
  wait $daemon || true
fi
kill $station 2>/dev/null || true
for reason in "${failed[@]}"; do echo "FAILED: $reason"; done
[ $checked -eq 0 ] || echo "FAILED: a target above was missed"
[ ${#failed[@]} -eq 0 ] && [ $checked -eq 0 ]
