// MPRIS: see docs/ARCHITECTURE.md.
