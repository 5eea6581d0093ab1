# Sourced by the bench scripts that run the daemon (from the repository's root).

# A scratch folder in $work, removed with every daemon on its private bus when the script
# exits; $SPOOL, the release build as `make build` makes it unless given; and GStreamer's
# registry at its usual place, so each daemon does not scan the plugins again.
bench_setup() {
  work=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null || true; pkill -f "address=unix:dir=$work" 2>/dev/null || true; rm -rf "$work"' EXIT
  if [ -z "${SPOOL:-}" ]; then
    swift build -c release --static-swift-stdlib --explicit-target-dependency-import-check error --product spool >/dev/null
    SPOOL=$PWD/.build/release/spool
  fi
  export GST_REGISTRY=${GST_REGISTRY:-${XDG_CACHE_HOME:-$HOME/.cache}/gstreamer-1.0/registry.$(uname -m).bin}
}

# The GStreamer encoder chain that writes a tone as FORMAT (mp3 with a Xing header and an ID3v2
# tag, flac, ogg|vorbis, opus, m4a, wav).
encoder_chain() {
  case $1 in
    mp3) echo "lamemp3enc ! xingmux ! id3v2mux" ;;
    flac) echo "flacenc" ;;
    ogg|vorbis) echo "vorbisenc ! oggmux" ;;
    opus) echo "audioresample ! opusenc ! oggmux" ;;
    m4a) echo "avenc_aac ! mp4mux faststart=true" ;;
    wav) echo "wavenc" ;;
    *) echo "unknown format: $1" >&2; return 1 ;;
  esac
}
