"""L2 discrete-event cluster simulator (no I/O)."""
