// MediaSource: see docs/ARCHITECTURE.md.
