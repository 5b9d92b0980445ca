"""End-to-end tests against real agent hosts (pi 1.6 under Node 22), marked slow."""
