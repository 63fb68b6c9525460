"""The program a smoke check runs inside its sandbox (stdlib only until the worker imports the SDK).

Shipped into the sandbox as a file and run by the throwaway venv's interpreter, in two processes:

- the **supervisor** (``runner.py ENV_ID``) reads the check's one-time key from stdin, makes itself
  non-dumpable (so no other process of the sandbox can read its memory or open its file descriptors),
  serves a tiny OpenAI-compatible model on the sandbox's own loopback (one fixed reply; it counts the
  requests), and starts the worker;
- the **worker** (``runner.py --worker ENV_ID BASE_URL FD``) imports the SDK, loads the environment
  with its defaults (or the ``[tool.verifiers.smoke] env_args`` its package declares, ``{model_url}`` in
  them standing for this model's base URL: a judge can be pointed at it), runs one rollout against that
  model and writes its outcome, one JSON object, to the pipe ``FD``. Its stdout and stderr go to the
  supervisor, never to the check's output directly.

The model answers every request with ``FIXED_REPLY``, except one asking for structured output
(``response_format`` with a JSON schema), which gets the smallest JSON object of that schema.

Only the supervisor writes the report, the check's last line: ``VF-SMOKE-REPORT <key> {json}`` with
``{"ok", "stage", "error", "reward", "model_requests"}``. The environment's code runs in the worker only,
which never sees the key, so nothing it prints, writes or exits with can forge a pass: no key, no report,
and ``smoke_check`` counts a missing report as a failure. The worker must also have reached the model.

Never imported: ``smoke_check`` reads this file's bytes and uploads it into the sandbox as ``runner.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FIXED_REPLY = "This is the hub's smoke-check model. The answer is 42."
MODEL = "vf-smoke-check"
REPORT_MARK = "VF-SMOKE-REPORT"
OUTPUT_KEPT = 48 * 1024  # bytes of the worker's output the supervisor passes on (the tail)
_PR_SET_DUMPABLE = 4


def schema_instance(schema: Any) -> Any:
    """The plainest value of a JSON schema (first enum value, const, zero, empty string, required fields)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: schema_instance(v) for k, v in props.items() if k in schema.get("required", props)}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(str(kind))


def reply_text(request: dict[str, Any]) -> str:
    """``FIXED_REPLY``, or a schema-shaped JSON object for a structured-output request."""
    fmt = request.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return json.dumps(schema_instance((fmt.get("json_schema") or {}).get("schema")))
    return FIXED_REPLY


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log is the check's output
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "hub"}]}
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        self.server.requests += 1  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {}
        created = int(time.time())
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        text = reply_text(request)
        if self.path.rstrip("/").endswith("/completions") and "messages" not in request:
            choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop"}
            kind = "text_completion"
        else:
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            kind = "chat.completion"
        if request.get("stream"):
            delta = {
                "index": 0,
                "delta": {"role": "assistant", "content": text},
                "finish_reason": None,
            }
            end = {"index": 0, "delta": {}, "finish_reason": "stop"}
            chunks = [
                {"id": "smoke", "object": "chat.completion.chunk", "created": created, "model": MODEL,
                 "choices": [c]}
                for c in (delta, end)
            ]  # fmt: skip
            chunks[-1]["usage"] = usage
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, body.encode(), "text/event-stream")
            return
        data = {"id": "smoke", "object": kind, "created": created, "model": MODEL, "choices": [choice],
                "usage": usage}  # fmt: skip
        self._send(200, json.dumps(data).encode())


def worker(env_id: str, base_url: str, fd: int) -> int:
    """Load the environment and run one rollout; the outcome goes to the pipe ``fd``, nowhere else."""
    channel = os.fdopen(fd, "w")

    def outcome(ok: bool, stage: str, **extra: Any) -> int:
        channel.write(json.dumps({"ok": ok, "stage": stage, **extra}, default=str))
        channel.close()
        return 0 if ok else 1

    stage = "import verifiers"
    try:
        import verifiers as vf

        from verifiers.envs.loading import smoke_env_args

        stage = "load_environment"
        args = {
            k: v.replace("{model_url}", base_url) if isinstance(v, str) else v
            for k, v in smoke_env_args(env_id).items()
        }
        env = vf.load_environment(env_id, **args)
        stage = "select a row"
        rows = env.select_rows(1)
        if not rows:
            return outcome(False, stage, error="the environment's eval split has no rows")
        stage = "rollout"
        states = env.generate(rows, base_url, MODEL, rollouts_per_example=1, max_concurrent=1)
    except BaseException as exc:  # the check reports every failure, whatever it is
        traceback.print_exc()
        return outcome(False, stage, error=f"{type(exc).__name__}: {exc}")
    state = states[0]
    error = state.get("error")
    return outcome(error is None, "done", reward=state.get("reward"), error=error)


def _undumpable() -> None:
    """No process of the same user may ptrace us or open /proc/<us>/{mem,fd}: the key stays ours."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the sandbox is the only boundary left


def _tail(stream: Any, kept: bytearray) -> None:
    for chunk in iter(lambda: stream.read(8192), b""):
        kept.extend(chunk)
        del kept[: max(0, len(kept) - OUTPUT_KEPT)]


def supervise(env_id: str) -> int:
    key = sys.stdin.readline().strip()
    sys.stdin.close()
    _undumpable()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.requests = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", env_id, base_url, str(write_end)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(write_end,),
    )
    os.close(write_end)
    output = bytearray()
    relay = threading.Thread(target=_tail, args=(proc.stdout, output), daemon=True)
    relay.start()
    with os.fdopen(read_end, "rb") as channel:
        raw = channel.read(1024 * 1024)  # until the worker closes it (or exits)
    status = proc.wait()
    relay.join(30)
    server.shutdown()
    sys.stdout.write(output.decode(errors="replace"))
    try:
        result = json.loads(raw) if raw else None
    except ValueError:
        result = None
    requests = server.requests  # type: ignore[attr-defined]
    if not isinstance(result, dict):
        report = {"ok": False, "stage": "run", "error": f"the environment's process exited with status "
                  f"{status} without reporting an outcome"}  # fmt: skip
    elif result.get("ok") and status != 0:
        report = {**result, "ok": False, "error": f"the environment's process exited with status {status}"}
    elif result.get("ok") and requests == 0:
        report = {**result, "ok": False, "error": "the rollout never called the model"}
    else:
        report = result
    report["model_requests"] = requests
    sys.stdout.write(f"\n{REPORT_MARK} {key} {json.dumps(report, default=str)}\n")
    sys.stdout.flush()
    return 0 if report.get("ok") else 1


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    sys.exit(supervise(sys.argv[1]))
