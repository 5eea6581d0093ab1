#!/usr/bin/env bash
# Installs the Debian packages Spool needs that are missing.
#   scripts/install-deps.sh run    # to build and run the daemon
#   scripts/install-deps.sh test   # also what the tests use (nginx, playerctl, gst tools)
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -euo pipefail

runtime=(
  pkg-config ca-certificates
  libdbus-1-dev dbus-daemon dbus-bin
  libcurl4-openssl-dev libssl-dev
  libsqlite3-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
  gstreamer1.0-pulseaudio
)
# pulseaudio + pulseaudio-utils: a private sound server (and pactl, parec, paplay) for the output tests.
# man-db + groff-base: the man page is checked with man --warnings; zsh, fish: their completions parse.
testing=(gstreamer1.0-tools gstreamer1.0-plugins-base-apps playerctl nginx-light icecast2 desktop-file-utils lame curl openssl
  pulseaudio pulseaudio-utils man-db groff-base zsh fish)

wanted=("${runtime[@]}")
[ "${1:-run}" = test ] && wanted+=("${testing[@]}")

missing=()
for package in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

command="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "Spool needs these Debian packages: ${missing[*]}" >&2
  echo "Install them with:  sudo apt-get update && sudo $command" >&2
  exit 1
fi
echo "Installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
$command >&2
