# Sourced by the bench scripts: the GStreamer encoder chain that writes a tone as FORMAT
# (mp3 with a Xing header and an ID3v2 tag, flac, ogg|vorbis, opus, m4a, wav).
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
