"""Hardening tests: fuzzed parsers, crash safety, concurrency, security and scale-out."""
