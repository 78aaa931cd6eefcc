"""The web-app world: a shop admin app served to a sandboxed Chromium the agent drives."""
