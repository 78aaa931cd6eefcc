"""Pi: its adapter, its session format, its conversation session."""
