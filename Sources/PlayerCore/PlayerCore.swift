// PlayerCore: see docs/ARCHITECTURE.md.
