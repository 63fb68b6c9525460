"""The pinned prime-rl release: its identity, and its config field sets as data.

``release_v0_5_0.json`` is generated from the release's source by ``scripts/extract_prime_rl_schema.py``
(prime-rl is not on PyPI and its trainer needs CUDA, so validate reads the checked-in data, never prime-rl
itself). It lists every config class with its fields and whether pydantic refuses unknown keys there: several nested sections
(``trainer.loss``, ``trainer.optim``, ``trainer.scheduler``, ``orchestrator.advantage``) are plain
``BaseModel`` classes that silently drop a typo, which is why ``check_keys`` checks every key itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

#: The release this adapter renders for, and its commit (a lightweight tag on GitHub).
RELEASE = "v0.5.0"
RELEASE_COMMIT = "63331ad8b17048b6d5f2051b2bf159e1392924b7"
#: prime-rl v0.5.0 pins ``verifiers`` at this git rev (v0.1.12.dev1); PyPI's 0.1.12 is the matching release,
#: the one the generated bridge packages depend on.
VERIFIERS_GIT_REV = "0db45e6"
REFERENCE_VERIFIERS = "0.1.12"

_DATA = Path(__file__).with_name("release_v0_5_0.json")
_SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "Path": (str,),
    "dict": (dict,),
    "list": (list,),
}


@cache
def release_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_DATA.read_text())
    return data


@dataclass(frozen=True)
class KeyProblem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _models_of(tree: dict[str, Any]) -> list[str]:
    """Config classes an annotation can hold (through aliases and unions)."""
    aliases = release_data()["aliases"]
    kind = tree["kind"]
    if kind == "ref":
        ref = tree["ref"]
        if ref in aliases:
            return _models_of(aliases[ref])
        return [ref] if ref in release_data()["classes"] else []
    if kind == "union":
        return [m for t in tree["of"] for m in _models_of(t)]
    return []


def _resolve(tree: dict[str, Any]) -> dict[str, Any]:
    aliases = release_data()["aliases"]
    while tree["kind"] == "ref" and tree["ref"] in aliases:
        tree = aliases[tree["ref"]]
    return tree


def _type_name(tree: dict[str, Any]) -> str:
    tree = _resolve(tree)
    kind = tree["kind"]
    if kind == "scalar":
        return str(tree["name"])
    if kind == "literal":
        return " | ".join(json.dumps(v) for v in tree["values"])
    if kind == "list":
        return f"list[{_type_name(tree['item'])}]"
    if kind == "union":
        return " | ".join(_type_name(t) for t in tree["of"])
    return "table" if kind == "ref" else kind


def _value_fits(value: Any, tree: dict[str, Any]) -> bool:
    tree = _resolve(tree)
    kind = tree["kind"]
    if kind == "union":
        return any(_value_fits(value, t) for t in tree["of"])
    if kind == "literal":
        return value in tree["values"]
    if kind == "list":
        return isinstance(value, list) and all(_value_fits(v, tree["item"]) for v in value)
    if kind == "ref":
        return isinstance(value, dict)
    name = tree["name"]
    if name == "Any":
        return True
    if name == "None":
        return False  # TOML has no null: an optional field is simply left out
    if isinstance(value, bool) and name in ("int", "float"):
        return False
    return isinstance(value, _SCALAR_TYPES[name])


def _pick_model(candidates: list[str], value: dict[str, Any], path: str) -> tuple[str | None, str | None]:
    """The class a table validates as: by its ``type`` discriminator when there are several."""
    classes = release_data()["classes"]
    if len(candidates) == 1:
        return candidates[0], None
    tag = value.get("type")
    for c in candidates:
        t = classes[c]["fields"].get("type")
        if t is not None and t["type"]["kind"] == "literal" and tag in t["type"]["values"]:
            return c, None
    if tag is None:
        return candidates[0], None  # pydantic takes the field's default class; the first is the common case
    allowed = sorted(
        v for c in candidates for v in classes[c]["fields"].get("type", {}).get("type", {}).get("values", [])
    )
    return None, f"type = {tag!r} is not one of {allowed} in prime-rl {RELEASE}"


def check_keys(doc: dict[str, Any], root: str = "rl:RLConfig", prefix: str = "") -> list[KeyProblem]:
    """Every key of ``doc`` checked against the release's fields, recursively; unknown keys, wrong value
    types and missing required fields are problems (each one line)."""
    classes = release_data()["classes"]
    fields: dict[str, Any] = classes[root]["fields"]
    problems: list[KeyProblem] = []
    for key, value in doc.items():
        path = f"{prefix}{key}"
        spec = fields.get(key)
        if spec is None:
            aliased = [n for n, f in fields.items() if key in f.get("aliases", [])]
            if aliased:
                continue
            known = ", ".join(sorted(fields))
            problems.append(KeyProblem(path, f"unknown key for prime-rl {RELEASE} (known here: {known})"))
            continue
        tree = _resolve(spec["type"])
        models = _models_of(spec["type"])
        if models and isinstance(value, dict):
            model, err = _pick_model(models, value, path)
            if model is None:
                problems.append(KeyProblem(path, str(err)))
            else:
                problems += check_keys(value, model, f"{path}.")
            continue
        item = tree.get("item") if tree["kind"] == "list" else None
        item_models = _models_of(item) if item is not None else []
        if item_models and isinstance(value, list):
            for i, entry in enumerate(value):
                if not isinstance(entry, dict):
                    problems.append(KeyProblem(f"{path}[{i}]", "must be a table"))
                    continue
                model, err = _pick_model(item_models, entry, path)
                if model is None:
                    problems.append(KeyProblem(f"{path}[{i}]", str(err)))
                else:
                    problems += check_keys(entry, model, f"{path}[{i}].")
            continue
        if not _value_fits(value, spec["type"]):
            problems.append(
                KeyProblem(path, f"{value!r} does not fit the release's type {_type_name(spec['type'])}")
            )
            continue
        for bound, ok in (
            ("ge", float.__ge__),
            ("gt", float.__gt__),
            ("le", float.__le__),
            ("lt", float.__lt__),
        ):
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            if bound in spec and numeric and not ok(float(value), float(spec[bound])):
                problems.append(KeyProblem(path, f"{value!r} violates {bound}={spec[bound]}"))
    for name, spec in fields.items():
        if spec.get("required") and name not in doc:
            problems.append(KeyProblem(f"{prefix}{name}", "required by the release but missing"))
    return problems


def section_fields(cls: str) -> list[str]:
    """The field names of one config class (``"trainer:CustomLossConfig"``)."""
    return sorted(release_data()["classes"][cls]["fields"])
