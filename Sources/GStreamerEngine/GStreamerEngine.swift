// GStreamerEngine: see docs/ARCHITECTURE.md.
