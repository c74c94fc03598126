"""Prefect flows: one module per flow, each a recipe of task calls."""
