// DBusKit: see docs/ARCHITECTURE.md.
