"""Wire formats the gateway speaks: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages."""
