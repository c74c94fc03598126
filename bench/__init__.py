"""Benchmarks that print their figures.

A package, so that mypy reads bench/queue.py as ``bench.queue`` rather than as the
standard library's ``queue``.
"""
