"""The parts of ``bench/scale.py``: the server, the store's build, the figures."""
