"""``assay perf``: an agent product's own cost, measured against the scripted gateway (docs/performance.md)."""
