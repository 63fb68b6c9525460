"""The rules file of the scripted model: what it answers to which conversation (docs/tools.md, "Testing
offline with the scripted model").

A file (``.toml`` or ``.json``) holds an ordered list of ``rules`` and an optional ``default``. Each request
is answered by the first rule whose conditions all hold (a rule without conditions always does), else by
the default, else with an HTTP 400 saying no rule matched::

    [[rules]]
    match = "2 + 3"                     # a substring of the last user or tool message
    tool_calls = [{ name = "add", arguments = { a = 2, b = 3 } }]

    [[rules]]
    tool_result = { equals = "5" }      # one of the results of the latest tool calls
    content = "The answer is 5."

Conditions: ``match`` (the text of the last user or tool message), ``role`` (that message's role),
``tool_result`` (any result of the tool calls the model made last; ``tool`` narrows it to one tool's
results). A text condition is a string (a substring) or a table of ``contains`` / ``equals`` (the whole
text, surrounding whitespace ignored) / ``regex`` (``re.search``), all of which must hold. ``times = N``
lets a rule answer its first N matches only (a 429 once, then the real answer).

Answers: ``content``, ``reasoning`` (``reasoning_content``), ``tool_calls`` (several are parallel calls),
``error`` (an HTTP status and message, optionally ``retry_after`` seconds and a raw ``body``), and ``delay``
(seconds before answering).
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

Role = Literal["user", "tool"]
#: Errors shown per problem in a ``RulesError`` message before "… and N more".
MAX_SHOWN_PROBLEMS = 3


class RulesError(ValueError):
    """A rules file that cannot be used: one line naming the file, the rule and the field to fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextMatch(_Strict):
    """A condition on a text: every one given must hold. A plain string in the file means ``contains``."""

    contains: str | None = None
    equals: str | None = None
    regex: str | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from None
        return value

    @model_validator(mode="after")
    def _says_something(self) -> TextMatch:
        if self.contains is None and self.equals is None and self.regex is None:
            raise ValueError("give contains, equals or regex")
        return self

    def test(self, text: str) -> bool:
        if self.contains is not None and self.contains not in text:
            return False
        if self.equals is not None and text.strip() != self.equals.strip():
            return False
        return self.regex is None or re.search(self.regex, text) is not None


class ToolCallSpec(_Strict):
    """One tool call the model makes: ``arguments`` is a table (sent as its JSON) or a raw string, which is
    sent as it is — malformed JSON included, to test how an environment takes it."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _table_or_text(cls, value: Any) -> Any:
        if not isinstance(value, dict | str):
            raise ValueError(f"must be a table of arguments or a JSON string, not {type(value).__name__}")
        return value

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def wire(self, call_id: str) -> dict[str, Any]:
        """The call as a chat-completions ``tool_calls`` entry (``call_id`` unless the rule gives an id)."""
        return {
            "id": self.id or call_id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json()},
        }


class ErrorSpec(_Strict):
    """An HTTP error instead of a completion (``body`` replaces the OpenAI-style error object)."""

    status: int = Field(ge=400, le=599)
    message: str = "scripted error"
    retry_after: float | None = Field(default=None, ge=0)
    body: dict[str, Any] | None = None


class Answer(_Strict):
    """What the model answers: a completion (content, reasoning, tool calls) or an error, after ``delay``."""

    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallSpec] | None = Field(default=None, min_length=1)
    error: ErrorSpec | None = None
    delay: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _answers(self) -> Answer:
        said = [n for n in ("content", "reasoning", "tool_calls") if getattr(self, n) is not None]
        if self.error is not None and said:
            raise ValueError(f"an error answer has no {', '.join(said)}: give one or the other")
        if self.error is None and not said:
            raise ValueError("nothing to answer: give content, reasoning, tool_calls or error")
        return self


class Rule(Answer):
    """An answer and the conditions under which it is given (all must hold; none: always)."""

    name: str | None = None
    match: TextMatch | None = None
    role: Role | None = None
    tool_result: TextMatch | None = None
    tool: str | None = None
    times: int | None = Field(default=None, ge=1)

    @field_validator("match", "tool_result", mode="before")
    @classmethod
    def _substring(cls, value: Any) -> Any:
        return {"contains": value} if isinstance(value, str) else value

    def applies(self, messages: list[dict[str, Any]]) -> bool:
        last = last_turn_message(messages)
        if self.role is not None and (last is None or last.get("role") != self.role):
            return False
        if self.match is not None and (last is None or not self.match.test(message_text(last))):
            return False
        if self.tool_result is not None or self.tool is not None:
            results = [text for name, text in latest_tool_results(messages) if self.tool in (None, name)]
            if not results:
                return False
            if self.tool_result is not None and not any(self.tool_result.test(t) for t in results):
                return False
        return True

    def label(self, index: int) -> str:
        return f"rule {index + 1}" + (f" ({self.name!r})" if self.name else "")


def message_text(message: dict[str, Any]) -> str:
    """A message's text: its content, or the text parts of a content list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def last_turn_message(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last user or tool message: what the model is answering."""
    return next((m for m in reversed(messages) if m.get("role") in ("user", "tool")), None)


def latest_tool_results(messages: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """(tool name, result text) of each tool message after the last assistant message; the name comes
    from the assistant's call with that ``tool_call_id``."""
    results: list[tuple[str | None, str]] = []
    for message in reversed(messages):
        role = message.get("role")
        if role == "tool":
            results.append((message.get("tool_call_id"), message_text(message)))
        elif role == "assistant":
            names = {
                c.get("id"): (c.get("function") or {}).get("name") for c in message.get("tool_calls") or []
            }
            return [(names.get(call_id), text) for call_id, text in reversed(results)]
        else:
            break
    return [(None, text) for _, text in reversed(results)]


class Script(_Strict):
    """A parsed rules file. ``answer(messages)`` picks the answer to one request (and counts it towards
    its rule's ``times``)."""

    rules: list[Rule] = Field(default_factory=list)
    default: Answer | None = None
    _used: dict[int, int] = PrivateAttr(default_factory=dict)

    @field_validator("default", mode="before")
    @classmethod
    def _text_default(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"content": value}
        if value is not None and not isinstance(value, dict | Answer):
            raise ValueError("must be a reply text or a table like a rule's answer (content, tool_calls, …)")
        return value

    @property
    def calls_tools(self) -> bool:
        """Whether any answer of the script calls a tool."""
        answers: list[Answer] = [*self.rules, *([self.default] if self.default else [])]
        return any(a.tool_calls for a in answers)

    def pick(self, messages: list[dict[str, Any]]) -> tuple[str, Answer]:
        """(which rule answered — ``rule 2 ('add')``, ``default``, ``no rule`` —, the answer)."""
        for i, rule in enumerate(self.rules):
            if rule.times is not None and self._used.get(i, 0) >= rule.times:
                continue
            if rule.applies(messages):
                self._used[i] = self._used.get(i, 0) + 1
                return rule.label(i), rule
        if self.default is not None:
            return "default", self.default
        last = last_turn_message(messages)
        shown = message_text(last)[:80] if last is not None else ""
        message = (
            f"scripted model: no rule matches the last message {shown!r} and the rules have no default; "
            "add a rule for it or a default"
        )
        return "no rule", Answer(error=ErrorSpec(status=400, message=message))

    def answer(self, messages: list[dict[str, Any]]) -> Answer:
        return self.pick(messages)[1]


#: The model each table of the file is read as, by the key it sits under.
_NESTED: dict[str, type[BaseModel]] = {
    "rules": Rule,
    "default": Answer,
    "tool_calls": ToolCallSpec,
    "error": ErrorSpec,
    "match": TextMatch,
    "tool_result": TextMatch,
}


def parse_script(data: Any, source: str = "rules") -> Script:
    """A ``Script`` from the file's data; ``RulesError`` naming ``source``, the rule and the field."""
    if not isinstance(data, dict):
        raise RulesError(
            f"{source}: expected a table with `rules` (and `default`), not {type(data).__name__}"
        )
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt field is also a missing one ("nme" for "name"): the unknown field says it all.
        misspelt = {tuple(e["loc"][:-1]) for e in errors if e["type"] == "extra_forbidden"}
        errors = [e for e in errors if not (e["type"] == "missing" and tuple(e["loc"][:-1]) in misspelt)]
        problems = [_problem(err, data) for err in errors]
        more = len(problems) - MAX_SHOWN_PROBLEMS
        shown = "; ".join(problems[:MAX_SHOWN_PROBLEMS]) + (f"; … and {more} more" if more > 0 else "")
        raise RulesError(f"{source}: {shown}") from None


def _fields_of(where: tuple[Any, ...]) -> list[str]:
    """The fields allowed at a location of the file (``("rules", 2, "tool_calls", 0)``: a tool call's)."""
    model: type[BaseModel] | None = Script
    for part in where:
        if not isinstance(part, int):
            model = _NESTED.get(str(part))
    return list(model.model_fields) if model is not None else []


def _field_path(parts: tuple[Any, ...]) -> str:
    """``("tool_calls", 0, "name")`` as ``tool_calls[0].name``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def _problem(err: Any, data: dict[str, Any]) -> str:
    loc: tuple[Any, ...] = tuple(err["loc"])
    if loc[:1] == ("rules",) and len(loc) > 1 and isinstance(loc[1], int):
        rules = data.get("rules")
        raw = rules[loc[1]] if isinstance(rules, list) and loc[1] < len(rules) else None
        name = raw.get("name") if isinstance(raw, dict) else None
        where = f"rule {loc[1] + 1}" + (f" ({name!r})" if isinstance(name, str) else "")
        rest = loc[2:]
    elif loc[:1] == ("default",):
        where, rest = "default", loc[1:]
    else:
        where, rest = "", loc
    if err["type"] == "extra_forbidden":
        known = _fields_of(loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})" if known else ""
        parent = _field_path(rest[:-1])
        text = f"{parent + ': ' if parent else ''}unknown field {str(loc[-1])!r}{hint}"
    else:
        field = _field_path(rest)
        message = str(err["msg"]).removeprefix("Value error, ")
        text = f"{field}: {message}" if field else message
    return f"{where}: {text}" if where else text


def load_script(path: str | Path) -> Script:
    """Read a rules file (``.toml`` or ``.json``); ``RulesError`` saying what to fix."""
    path = Path(path)
    if path.suffix not in (".toml", ".json"):
        raise RulesError(f"{path}: a rules file is .toml or .json")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise RulesError(f"no rules file at {path}") from None
    except OSError as exc:
        raise RulesError(f"cannot read the rules file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{path}: not valid TOML: {exc}") from None
    except json.JSONDecodeError as exc:
        raise RulesError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    return parse_script(data, str(path))


__all__ = [
    "Answer",
    "ErrorSpec",
    "Rule",
    "RulesError",
    "Script",
    "TextMatch",
    "ToolCallSpec",
    "load_script",
    "parse_script",
]
