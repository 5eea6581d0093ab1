// Fetcher: see docs/ARCHITECTURE.md.
