"""The docstring reader behind tool descriptions (styles are also covered through tools in test_tool_schema)."""

from __future__ import annotations

from verifiers.envs.docstrings import parse_docstring


def test_parse_docstring_edge_cases() -> None:
    assert parse_docstring(None).description == ""
    doc = parse_docstring("Only a summary.")
    assert doc.description == "Only a summary." and doc.params == {}
    doc = parse_docstring("Sum.\n\nArgs:\n    *values: Numbers.\n    **opts: Options.\n")
    assert doc.params == {"values": "Numbers.", "opts": "Options."}
