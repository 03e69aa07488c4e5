"""Benchmarks: each module times one step against a baseline and prints the ratio."""
