#!/usr/bin/env python3
"""Derive the config field sets of a prime-rl release from its source, for ``vf-train validate``.

prime-rl is not installable here (CUDA, not on PyPI), so its pydantic classes are read with ``ast``, never
imported: every class in ``src/prime_rl/configs/*.py`` with its fields (annotation, default or required,
numeric bounds), whether it refuses unknown keys (``pydantic_config.BaseConfig`` and
``ConfigDict(extra="forbid")`` do; a plain ``BaseModel`` silently drops them), and every ``TypeAlias``
(discriminated unions). The output is checked in as
``verifiers/training/prime_rl/release_v0_5_0.json``; CI has no prime-rl checkout.

    python scripts/extract_prime_rl_schema.py --git-dir /path/to/prime-rl/.git --rev v0.5.0 \
        > verifiers/training/prime_rl/release_v0_5_0.json
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CONFIG_MODULES = ("shared", "orchestrator", "trainer", "inference", "rl")
SCALARS = {"int", "float", "str", "bool", "Path", "Any", "None", "dict", "list"}


class Source:
    def __init__(self, git_dir: str | None, rev: str | None, src: Path | None) -> None:
        self.git_dir, self.rev, self.src = git_dir, rev, src

    def read(self, rel: str) -> str:
        if self.src is not None:
            return (self.src / rel).read_text()
        out = subprocess.run(
            ["git", "-C", str(self.git_dir), "show", f"{self.rev}:{rel}"],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def commit(self) -> str | None:
        if self.git_dir is None:
            return None
        out = subprocess.run(
            ["git", "-C", str(self.git_dir), "rev-list", "-n1", str(self.rev)],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()


class ModuleInfo:
    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name = name
        self.tree = tree
        #: local name -> "module:Name" for names imported from other config modules
        self.imports: dict[str, str] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.aliases: dict[str, ast.expr] = {}
        for node in tree.body:
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("prime_rl.configs.")
            ):
                mod = node.module.rsplit(".", 1)[1]
                for a in node.names:
                    self.imports[a.asname or a.name] = f"{mod}:{a.name}"
            elif isinstance(node, ast.ImportFrom) and node.module in (
                "prime_rl.utils.config",
                "pydantic_config",
            ):
                for a in node.names:
                    if a.name == "BaseConfig":
                        self.imports[a.asname or a.name] = "pydantic_config:BaseConfig"
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(node.annotation, ast.Name)
                and node.annotation.id == "TypeAlias"
                and node.value is not None
            ):
                self.aliases[node.target.id] = node.value

    def resolve(self, name: str) -> str:
        if name in self.classes or name in self.aliases:
            return f"{self.name}:{name}"
        return self.imports.get(name, name)


def _const(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def type_tree(node: ast.expr, mod: ModuleInfo) -> dict[str, Any]:
    """An annotation as a small JSON tree: union / literal / list / dict / scalar / ref."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # forward reference "X | None"
        return type_tree(ast.parse(node.value, mode="eval").body, mod)
    if isinstance(node, ast.Constant) and node.value is None:
        return {"kind": "scalar", "name": "None"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts: list[dict[str, Any]] = []
        for side in (node.left, node.right):
            t = type_tree(side, mod)
            parts.extend(t["of"] if t["kind"] == "union" else [t])
        return {"kind": "union", "of": parts}
    if isinstance(node, ast.Name):
        if node.id in SCALARS:
            return {"kind": "scalar", "name": node.id}
        return {"kind": "ref", "ref": mod.resolve(node.id)}
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value)
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Annotated":
            inner = type_tree(args[0], mod)
            for extra in args[1:]:
                if isinstance(extra, ast.Call) and ast.unparse(extra.func) == "Field":
                    for kw in extra.keywords:
                        if kw.arg == "discriminator":
                            inner["discriminator"] = _const(kw.value)
            return inner
        if head == "Literal":
            return {"kind": "literal", "values": [_const(a) for a in args]}
        if head in ("list", "List", "tuple"):
            return {"kind": "list", "item": type_tree(args[0], mod)}
        if head in ("dict", "Dict"):
            return {"kind": "scalar", "name": "dict"}
        if head == "Optional":
            return {"kind": "union", "of": [type_tree(args[0], mod), {"kind": "scalar", "name": "None"}]}
    return {"kind": "scalar", "name": "Any", "source": ast.unparse(node)}


def field_bounds(ann: ast.expr, value: ast.expr | None) -> dict[str, Any]:
    calls: list[ast.Call] = []
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value) == "Annotated":
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else []
        calls += [e for e in elts[1:] if isinstance(e, ast.Call)]
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "Field":
        calls.append(value)
    out: dict[str, Any] = {}
    for call in calls:
        for kw in call.keywords:
            if kw.arg in ("ge", "gt", "le", "lt"):
                out[kw.arg] = _const(kw.value)
            if kw.arg in ("default", "default_factory"):
                out["has_default"] = True
            if kw.arg == "validation_alias":
                out["aliases"] = [_const(a) for a in kw.value.args if isinstance(kw.value, ast.Call)]
    return out


def class_record(cls: ast.ClassDef, mod: ModuleInfo) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    forbid: bool | None = None
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "model_config" for t in stmt.targets)
            and isinstance(stmt.value, ast.Call)
        ):
            for kw in stmt.value.keywords:
                if kw.arg == "extra":
                    forbid = _const(kw.value) == "forbid"
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
            if name == "model_config" or name.startswith("_"):
                continue
            rec: dict[str, Any] = {"type": type_tree(stmt.annotation, mod), "line": stmt.lineno}
            bounds = field_bounds(stmt.annotation, stmt.value)
            rec["required"] = stmt.value is None and not bounds.pop("has_default", False)
            bounds.pop("has_default", None)
            rec.update(bounds)
            fields[name] = rec
    return {
        "module": f"src/prime_rl/configs/{mod.name}.py",
        "line": cls.lineno,
        "bases": [mod.resolve(ast.unparse(b)) for b in cls.bases],
        "own_forbid": forbid,
        "own_fields": fields,
    }


def flatten(classes: dict[str, dict[str, Any]]) -> None:
    """Merge inherited fields and the extra-keys policy into every class."""

    def resolve(key: str, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], bool]:
        rec = classes[key]
        fields: dict[str, Any] = {}
        forbid = False
        for base in rec["bases"]:
            if base == "pydantic_config:BaseConfig":
                forbid = True
            elif base in classes and base not in seen:
                f, b = resolve(base, (*seen, key))
                fields.update(f)
                forbid = forbid or b
        fields.update(rec["own_fields"])
        if rec["own_forbid"] is not None:
            forbid = rec["own_forbid"]
        return fields, forbid

    for key, rec in classes.items():
        rec["fields"], rec["forbid_extra"] = resolve(key)
    for rec in classes.values():
        del rec["own_fields"], rec["own_forbid"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir")
    ap.add_argument("--rev", default="v0.5.0")
    ap.add_argument("--src", type=Path, help="a prime-rl checkout (instead of --git-dir)")
    args = ap.parse_args()
    if (args.git_dir is None) == (args.src is None):
        ap.error("give exactly one of --git-dir or --src")
    source = Source(args.git_dir, args.rev, args.src)
    classes: dict[str, dict[str, Any]] = {}
    aliases: dict[str, Any] = {}
    for name in CONFIG_MODULES:
        mod = ModuleInfo(name, ast.parse(source.read(f"src/prime_rl/configs/{name}.py")))
        for cname, cls in mod.classes.items():
            classes[f"{name}:{cname}"] = class_record(cls, mod)
        for aname, expr in mod.aliases.items():
            aliases[f"{name}:{aname}"] = type_tree(expr, mod)
    flatten(classes)
    pyproject = source.read("pyproject.toml")
    pin = next((ln.strip() for ln in pyproject.splitlines() if ln.strip().startswith("verifiers = {")), None)
    out = {
        "release": args.rev,
        "commit": source.commit(),
        "generated_by": "scripts/extract_prime_rl_schema.py",
        "verifiers_pin": pin,
        "root": "rl:RLConfig",
        "classes": dict(sorted(classes.items())),
        "aliases": dict(sorted(aliases.items())),
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
