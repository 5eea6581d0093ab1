#!/usr/bin/env bash
# Starts `spool daemon` in the foreground on the user's session bus.
# With no session bus (a headless box, ssh), starts a private one first and
# prints the DBUS_SESSION_BUS_ADDRESS that clients such as playerctl need.
set -euo pipefail
binary=${1:?usage: run-daemon.sh PATH-TO-SPOOL [daemon options]}
shift

bus_usable() {
  [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v dbus-send >/dev/null &&
    dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetId >/dev/null 2>&1
}

if ! bus_usable; then
  runtime=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}
  if [ -S "$runtime/bus" ]; then
    export DBUS_SESSION_BUS_ADDRESS="unix:path=$runtime/bus"
  fi
fi
if ! bus_usable; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/spool-bus.XXXXXX")
  address_file="$dir/address"
  dbus-daemon --session --fork --nopidfile --address="unix:dir=$dir" --print-address=3 3>"$address_file"
  export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$address_file")
  echo "No session bus found: started a private one. In another shell, run:" >&2
  echo "  export DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS'" >&2
  echo "  playerctl -p spool open https://example.org/song.mp3" >&2
  bus_pid=$(pgrep -f -n "dbus-daemon --session --fork --nopidfile --address=unix:dir=$dir" || true)
  trap '[ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null; rm -rf "$dir"' EXIT
fi
"$binary" daemon "$@"
