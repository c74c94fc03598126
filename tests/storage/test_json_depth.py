"""Nesting is measured without recursion, brackets in strings aside."""

from __future__ import annotations

import json

from storage.kernel.json_depth import MAX_DEPTH, nested_deeper_than


def test_depth_is_counted_outside_strings_only() -> None:
    assert not nested_deeper_than(json.dumps({"a": [[1, 2], {"b": "[[[[[[[["}]}), limit=3)
    assert nested_deeper_than("[[[[1]]]]", limit=3)
    assert not nested_deeper_than('"\\"[[[[[[" ', limit=1)  # an escaped quote keeps the string
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert nested_deeper_than(deep) and not nested_deeper_than(deep[1:-1])
    assert json.loads(deep[1:-1])  # what passes, json's decoder reads without trouble


def test_hostile_text_is_judged_without_recursion() -> None:
    assert nested_deeper_than("[" * 1_000_000)  # far past the interpreter's recursion limit
    assert not nested_deeper_than(json.dumps({"text": "x[" * 5_000_000}))  # 10 MB string
