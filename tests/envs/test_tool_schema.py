"""Tool schemas from type hints and docstrings, and argument validation."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from verifiers.envs.tool_schema import Tool, ToolArgumentError


class Point(BaseModel):
    x: float
    y: float = 0.0


class Polygon(BaseModel):
    points: list[Point] = Field(description="corners, in order")
    label: str | None = None


def google(shape: Polygon, mode: Literal["fill", "outline"] = "fill", scale: float | None = None) -> str:
    """Draw a polygon on the canvas.

    The canvas is
    shared by all calls.

    Args:
        shape: The polygon to
            draw.
        mode (str, optional): How to draw it.
        scale: Zoom factor; None keeps the current one.

    Returns:
        str: A confirmation.
    """
    return "ok"


def numpy_style(a: int, b: list[int]) -> int:
    """Count matches.

    Parameters
    ----------
    a : int
        The value to look for.
    b : list of int
        Where to look,
        possibly empty.

    Returns
    -------
    int
        How often ``a`` occurs.
    """
    return b.count(a)


def rest_style(path: str, limit: int = 10) -> list[str]:
    """Read lines.

    :param path: File to read.
    :param int limit: Max lines,
        counted from the top.
    :returns: The lines.
    """
    return []


def test_google_docstring_types_defaults_and_nested_models() -> None:
    fn = Tool.from_function(google).schema["function"]
    assert fn["name"] == "google"
    assert fn["description"] == "Draw a polygon on the canvas.\n\nThe canvas is shared by all calls."
    params = fn["parameters"]
    assert params["type"] == "object" and params["required"] == ["shape"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["shape"]["description"] == "The polygon to draw."
    # nested models are inlined (no $ref), with their own required fields and descriptions
    assert "$defs" not in params and "$ref" not in json.dumps(params)
    points = props["shape"]["properties"]["points"]
    assert points["type"] == "array" and points["description"] == "corners, in order"
    assert points["items"]["required"] == ["x"]
    assert points["items"]["properties"]["y"] == {"type": "number", "default": 0.0}
    assert props["mode"] == {
        "type": "string",
        "enum": ["fill", "outline"],
        "default": "fill",
        "description": "How to draw it.",
    }
    assert {"type": "null"} in props["scale"]["anyOf"] and props["scale"]["default"] is None
    assert "title" not in json.dumps(params)


def test_numpy_and_rest_docstrings() -> None:
    np_fn = Tool.from_function(numpy_style).schema["function"]
    assert np_fn["description"] == "Count matches."
    assert np_fn["parameters"]["properties"]["a"]["description"] == "The value to look for."
    assert np_fn["parameters"]["properties"]["b"] == {
        "type": "array",
        "items": {"type": "integer"},
        "description": "Where to look, possibly empty.",
    }
    rest_fn = Tool.from_function(rest_style).schema["function"]
    assert rest_fn["description"] == "Read lines."
    props = rest_fn["parameters"]["properties"]
    assert props["path"]["description"] == "File to read."
    assert props["limit"]["description"] == "Max lines, counted from the top."
    assert props["limit"]["default"] == 10 and rest_fn["parameters"]["required"] == ["path"]


def test_undocumented_and_unannotated_parameters() -> None:
    def f(a, b: int = 2):
        return a

    fn = Tool.from_function(f).schema["function"]
    assert fn["description"] == ""
    assert fn["parameters"]["properties"] == {"a": {}, "b": {"type": "integer", "default": 2}}


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


def test_recursive_models_keep_their_defs() -> None:
    def size(tree: Tree) -> int:
        return 1

    params = Tool.from_function(size).parameters
    assert params["properties"]["tree"] == {"$ref": "#/$defs/Tree"}
    assert params["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}


def test_parameter_names_that_shadow_basemodel_attributes() -> None:
    def f(json: str, schema: int = 1, model_config: str = "x") -> str:
        return json

    tool = Tool.from_function(f)
    assert set(tool.parameters["properties"]) == {"json", "schema", "model_config"}
    assert tool.parse_arguments('{"json": "a", "schema": "2"}') == {"json": "a", "schema": 2}


def test_parse_arguments_validates_and_keeps_function_defaults() -> None:
    tool = Tool.from_function(google)
    args = tool.parse_arguments({"shape": {"points": [{"x": 1}]}})
    assert set(args) == {"shape"}  # defaults are the function's own, not re-passed
    assert isinstance(args["shape"], Polygon) and args["shape"].points[0] == Point(x=1.0)
    with pytest.raises(ToolArgumentError, match=r"not valid JSON"):
        tool.parse_arguments('{"shape": ')
    with pytest.raises(ToolArgumentError, match=r"must be a JSON object"):
        tool.parse_arguments("[1, 2]")
    with pytest.raises(ToolArgumentError) as err:
        tool.parse_arguments({"shape": {"points": [{"y": 1}]}, "mode": "dotted", "color": "red"})
    msg = str(err.value)
    assert "shape.points.0.x: Field required" in msg and "mode: Input should be 'fill' or 'outline'" in msg
    assert "color: Extra inputs are not permitted" in msg and "https://" not in msg


def test_empty_arguments_mean_no_arguments() -> None:
    def now() -> str:
        return "noon"

    assert Tool.from_function(now).parse_arguments("") == {}
    assert Tool.from_function(now).parse_arguments(None) == {}
    with pytest.raises(ToolArgumentError, match="path: Field required"):
        Tool.from_function(rest_style).parse_arguments("")


def test_hidden_arguments_are_absent_and_may_have_any_type() -> None:
    class Handle:  # not JSON-schema-able: fine once hidden
        pass

    def run(code: str, handle: Handle, retries: int = 1) -> str:
        """Run code.

        Args:
            code: The program.
            handle: Injected by the environment.
        """
        return code

    with pytest.raises(TypeError, match="hidden_args"):
        Tool.from_function(run)
    tool = Tool.from_function(run, hidden_args=["handle"])
    assert set(tool.parameters["properties"]) == {"code", "retries"}
    assert "handle" not in json.dumps(tool.schema)
    assert tool.required_hidden == {"handle"}
    with pytest.raises(ToolArgumentError, match="handle: Extra inputs are not permitted"):
        tool.parse_arguments({"code": "1", "handle": "forged"})
    with pytest.raises(ValueError, match="no parameter"):
        Tool.from_function(run, hidden_args=["nope"])


def test_invalid_tool_definitions() -> None:
    def star(*args: int) -> int:
        return 0

    with pytest.raises(TypeError, match="args"):
        Tool.from_function(star)
    with pytest.raises(ValueError, match="tool name"):
        Tool.from_function(rest_style, name="has space")
