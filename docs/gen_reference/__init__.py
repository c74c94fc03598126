"""The documentation's generated reference pages, each built from the code it describes
(loaded by ``docs/hooks.py``, which MkDocs runs at build time)."""
