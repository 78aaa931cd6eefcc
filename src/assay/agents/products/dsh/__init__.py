"""DeepSeek Harness: its adapter and its session format."""
