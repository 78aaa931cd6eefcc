"""Conversation tasks: live turns fed to the agent through its own session mechanism, the
state kept after every turn, and the per-turn verdicts (docs/conversations.md)."""
