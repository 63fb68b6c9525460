"""Whether uploaded source defines ``load_environment``, decided by ``ast`` in a child process.

``ast.parse`` of a few hundred KiB of hostile source can allocate over 100 MiB and run for seconds, and
deep nesting raises ``RecursionError``/``MemoryError``; a child with its own memory and CPU limits keeps
all of that out of the hub. Nothing is imported or executed: the child only parses.
"""

from __future__ import annotations

from hub_server.bounded import UploadError
from hub_server.child import run_json_child

#: Largest source file the hub parses; environment entry modules are a few KiB.
MAX_SOURCE_SIZE = 256 * 1024
_CHILD_MEMORY = 512 * 1024 * 1024
_CHILD_CPU_SECONDS = 10
_TIMEOUT = 20.0

# Runs with -I -S (no site, no user paths, no environment variables): stdlib only.
_CHILD = r"""
import ast, json, sys
try:
    import resource
    memory, cpu = int(sys.argv[2]), int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
except (ImportError, ValueError, OSError):
    pass

def defines(body):
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "load_environment":
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "load_environment" for t in node.targets
        ):
            return True
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and (
            node.target.id == "load_environment"
        ):
            return True
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == "load_environment" for a in node.names
        ):
            return True
        if isinstance(node, (ast.If, ast.Try)):
            # Definitions guarded by if/try at module level still define the name.
            for part in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, part, []):
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return False

try:
    tree = ast.parse(sys.stdin.buffer.read(), filename=sys.argv[1])
    out = {"defines": defines(tree.body)}
except SyntaxError as exc:
    out = {"syntax": [exc.lineno, exc.msg]}
except (RecursionError, MemoryError, ValueError, OverflowError) as exc:
    out = {"error": type(exc).__name__}
sys.stdout.write(json.dumps(out))
"""


def defines_load_environment(source: bytes, where: str) -> bool:
    """True if ``source`` defines ``load_environment`` at module level; ``UploadError`` naming ``where``
    if the file is too large, not valid Python, or too complex to parse within the child's limits."""
    if len(source) > MAX_SOURCE_SIZE:
        raise UploadError(
            f"{where} is {len(source)} bytes; the hub parses at most {MAX_SOURCE_SIZE} (move code into "
            "submodules and import load_environment from there)",
            413,
        )
    too_complex = UploadError(
        f"{where} could not be parsed within the hub's limits (too deeply nested or too large)"
    )
    argv = ["-S", "-c", _CHILD, where, str(_CHILD_MEMORY), str(_CHILD_CPU_SECONDS)]
    result = run_json_child(argv, source, timeout=_TIMEOUT) or {}
    if "syntax" in result:
        line, msg = result["syntax"]
        raise UploadError(f"{where}: syntax error at line {line}: {msg}")
    if "defines" not in result:  # the child hit a limit (MemoryError, RecursionError, killed, ...)
        raise too_complex
    return bool(result["defines"])
