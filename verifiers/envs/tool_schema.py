"""Turning plain Python functions into model tools: OpenAI JSON schemas from type hints and docstrings,
and validation of the arguments a model sends.

A tool is any function (sync or async) with annotated, named parameters::

    def search(query: str, limit: int = 5) -> list[str]:
        \"\"\"Search the corpus.

        Args:
            query: What to look for.
            limit: How many hits to return.
        \"\"\"

The parameter schema comes from pydantic (so nested models, ``Literal``, ``Optional`` and defaults all
work); the descriptions come from the docstring (Google ``Args:``, NumPy ``Parameters`` or reST
``:param x:`` style; see ``verifiers.envs.docstrings``). *Hidden* arguments are left out of the schema entirely: the model never sees them
and cannot set them; the environment injects them (see ``StatefulToolEnv``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from verifiers.envs.docstrings import parse_docstring

__all__ = [
    "Tool",
    "ToolArgumentError",
    "ToolCallError",
    "UnknownToolError",
]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# --- errors the model caused (shown to it as tool messages, never raised out of a rollout) -----------
class ToolCallError(Exception):
    """A tool call the model got wrong: its text is what the model reads back."""


class UnknownToolError(ToolCallError):
    """The model called a tool that does not exist."""


class ToolArgumentError(ToolCallError):
    """The arguments were not valid JSON, not an object, or failed validation against the schema."""


# --- JSON schema clean-up --------------------------------------------------------------------------
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames")


def _walk(node: Any, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """Apply ``fn`` to every subschema (bottom-up), knowing which keys hold schemas and which hold names."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: _walk(v, fn) for k, v in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_walk(v, fn) for v in out[key]]
    for key in _SCHEMA_ONE:
        if isinstance(out.get(key), dict):
            out[key] = _walk(out[key], fn)
    return fn(out)


def _drop_title(node: dict[str, Any]) -> dict[str, Any]:
    if isinstance(node.get("title"), str):
        del node["title"]
    return node


def _refs(node: Any) -> set[str]:
    found: set[str] = set()

    def visit(n: dict[str, Any]) -> dict[str, Any]:
        ref = n.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref.removeprefix("#/$defs/"))
        return n

    _walk(node, visit)
    return found


def _is_recursive(defs: dict[str, Any]) -> bool:
    graph = {name: _refs(schema) for name, schema in defs.items()}
    state: dict[str, int] = {}

    def cyclic(name: str) -> bool:
        if state.get(name) == 1:
            return True
        if state.get(name) == 2:
            return False
        state[name] = 1
        if any(cyclic(n) for n in graph.get(name, ())):
            return True
        state[name] = 2
        return False

    return any(cyclic(n) for n in graph)


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace ``$ref``s by their definitions: many servers' tool-call templates cannot follow refs.
    Recursive models cannot be inlined and keep their ``$defs``."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict) or _is_recursive(defs):
        return schema

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
            return node
        target = _walk(defs[ref.removeprefix("#/$defs/")], resolve)
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}

    out: dict[str, Any] = _walk({k: v for k, v in schema.items() if k != "$defs"}, resolve)
    return out


# --- tools -----------------------------------------------------------------------------------------
def _func_name(func: Callable[..., Any]) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def _is_async(func: Callable[..., Any]) -> bool:
    # callable objects with an async __call__ count too
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def _visible_hints(
    func: Callable[..., Any], sig: inspect.Signature, hidden: frozenset[str], tool_name: str
) -> dict[str, Any]:
    """Resolved type hints of the parameters the model sees. Hidden ones are skipped: their types are
    often imported for type checkers only (``if TYPE_CHECKING:``) and cannot be resolved at run time."""
    target = inspect.unwrap(getattr(func, "__func__", func))
    annotations = {
        name: p.annotation
        for name, p in sig.parameters.items()
        if name not in hidden and p.annotation is not p.empty
    }
    holder = SimpleNamespace(__annotations__=annotations, __globals__=getattr(target, "__globals__", {}))
    try:
        return typing.get_type_hints(holder, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"tool {tool_name!r}: cannot resolve its parameter annotations ({exc}); "
            "hide arguments the model must not set (hidden_args=...)"
        ) from exc


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Tool:
    """A function offered to the model, with its OpenAI schema and an argument validator.

    Build one with ``Tool.from_function``. ``schema`` is the entry of the ``tools`` request field:
    ``{"type": "function", "function": {"name", "description", "parameters"}}``.
    """

    name: str
    func: Callable[..., Any]
    schema: dict[str, Any]
    hidden_args: frozenset[str]
    #: Hidden arguments the function cannot do without (no default): the environment must supply them.
    required_hidden: frozenset[str]
    is_async: bool
    _model: type[BaseModel] = field(repr=False)
    #: validator field name -> function parameter name
    _fields: dict[str, str] = field(repr=False)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        hidden_args: Collection[str] = (),
    ) -> Tool:
        """Build a tool from ``func``'s signature, type hints and docstring.

        ``hidden_args`` are removed before the schema is built, so their types need not be
        JSON-schema-able (a ``Sandbox``, a database handle, ...).
        """
        tool_name = name or _func_name(func)
        if not _TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must match {_TOOL_NAME.pattern} (OpenAI's rule)")
        sig = inspect.signature(func)
        hidden = frozenset(hidden_args)
        unknown = hidden - set(sig.parameters)
        if unknown:
            raise ValueError(f"tool {tool_name!r} has no parameter(s) {sorted(unknown)} to hide")
        hints = _visible_hints(func, sig, hidden, tool_name)
        doc = parse_docstring(inspect.getdoc(func))
        definitions: dict[str, Any] = {}
        fields: dict[str, str] = {}
        required_hidden: set[str] = set()
        for i, p in enumerate(sig.parameters.values()):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"tool {tool_name!r}: *args/**kwargs cannot be described to a model")
            if p.kind is p.POSITIONAL_ONLY:
                raise TypeError(f"tool {tool_name!r}: positional-only parameter {p.name!r} is not supported")
            if p.name in hidden:
                if p.default is p.empty:
                    required_hidden.add(p.name)
                continue
            annotation = hints.get(p.name, Any)
            default = ... if p.default is p.empty else p.default
            # Fields get neutral names and the parameter name as alias: a parameter called `json` or
            # `schema` would otherwise shadow a BaseModel attribute.
            fname = f"p{i}"
            fields[fname] = p.name
            definitions[fname] = (
                annotation,
                Field(default, alias=p.name, description=doc.params.get(p.name) or None),
            )
        try:
            model = create_model(
                f"{tool_name}_arguments",
                __config__=ConfigDict(extra="forbid"),
                **definitions,
            )
            parameters = model.model_json_schema(by_alias=True)
        except Exception as exc:
            raise TypeError(
                f"tool {tool_name!r}: cannot build a JSON schema for its parameters ({exc}); "
                "hide arguments the model must not set (hidden_args=...)"
            ) from exc
        parameters = _inline_refs(_walk(parameters, _drop_title))
        # the conventional key order, for readable request logs
        parameters = {"type": "object", "properties": {}, **parameters}
        function: dict[str, Any] = {
            "name": tool_name,
            "description": description if description is not None else doc.description,
            "parameters": parameters,
        }
        return cls(
            name=tool_name,
            func=func,
            schema={"type": "function", "function": function},
            hidden_args=hidden,
            required_hidden=frozenset(required_hidden),
            is_async=_is_async(func),
            _model=model,
            _fields=fields,
        )

    @property
    def parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = self.schema["function"]["parameters"]
        return params

    def parse_arguments(self, raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Decode (JSON text or an already-decoded object) and validate a call's arguments.

        Returns keyword arguments for the function, with validated values (nested models built) and
        only the arguments the model gave, so the function's own defaults apply. Raises
        ``ToolArgumentError`` with a message meant for the model.
        """
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            args: Any = {}
        elif isinstance(raw, str):
            try:
                args = json.loads(raw)
            except ValueError as exc:
                raise ToolArgumentError(
                    f"arguments for tool {self.name!r} are not valid JSON ({exc}): {raw[:200]!r}"
                ) from None
        else:
            args = raw
        if not isinstance(args, Mapping):
            raise ToolArgumentError(
                f"arguments for tool {self.name!r} must be a JSON object, got {type(args).__name__}"
            )
        try:
            validated = self._model.model_validate(args)
        except ValidationError as exc:
            raise ToolArgumentError(
                f"invalid arguments for tool {self.name!r}: {_validation_message(exc)}"
            ) from None
        return {self._fields[f]: getattr(validated, f) for f in validated.model_fields_set}

    async def call(self, kwargs: Mapping[str, Any]) -> Any:
        """Run the function; sync functions run in a worker thread so parallel calls overlap."""
        if self.is_async:
            return await self.func(**kwargs)
        result = await asyncio.to_thread(self.func, **kwargs)
        if inspect.isawaitable(result):  # a sync callable that returned a coroutine
            result = await result
        return result
