"""The reference agent: its adapter (host side), and the loop and tools it runs inside the sandbox."""
