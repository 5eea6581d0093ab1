// EngineAPI: see docs/ARCHITECTURE.md.
