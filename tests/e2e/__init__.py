"""End-to-end tests against real agent hosts (pi 1.6 under Node 22, Claude Code, Codex CLI), marked slow."""
