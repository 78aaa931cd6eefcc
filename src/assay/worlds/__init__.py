"""Business worlds: harness-run services (ledger, tickets, outbox, user channel) whose state
lives in SQLite outside the sandbox, reached only through the harness's tool endpoint
(natively over HTTP, over MCP, or with the ``assay-tool`` shell shim)."""
