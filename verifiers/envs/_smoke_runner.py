"""The program a smoke check runs inside its sandbox (stdlib only until it imports the SDK).

Shipped into the sandbox as a file and run by the throwaway venv's interpreter: it starts a tiny
OpenAI-compatible server on the sandbox's own loopback that answers every request with one fixed reply
(a sandbox has no other network, and no process outlives one ``exec``, so the model lives in this
process, on a thread), loads the environment with its defaults and runs one rollout against it. The
last line of its output is one JSON object: ``{"ok": bool, "stage": str, "reward": ..., "error": ...}``.

Never imported: ``smoke_check`` reads this file's bytes and uploads it into the sandbox as ``runner.py``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FIXED_REPLY = "This is the hub's smoke-check model. The answer is 42."
MODEL = "vf-smoke-check"


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
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {}
        created = int(time.time())
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if self.path.rstrip("/").endswith("/completions") and "messages" not in request:
            choice: dict[str, Any] = {"index": 0, "text": FIXED_REPLY, "finish_reason": "stop"}
            kind = "text_completion"
        else:
            message = {"role": "assistant", "content": FIXED_REPLY}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            kind = "chat.completion"
        if request.get("stream"):
            delta = {
                "index": 0,
                "delta": {"role": "assistant", "content": FIXED_REPLY},
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


def _report(ok: bool, stage: str, **extra: Any) -> int:
    print(json.dumps({"ok": ok, "stage": stage, **extra}, default=str), flush=True)
    return 0 if ok else 1


def main(env_id: str) -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    stage = "import verifiers"
    try:
        import verifiers as vf

        stage = "load_environment"
        env = vf.load_environment(env_id)
        stage = "select a row"
        rows = env.select_rows(1)
        if not rows:
            return _report(False, stage, error="the environment's eval split has no rows")
        stage = "rollout"
        states = env.generate(rows, base_url, MODEL, rollouts_per_example=1, max_concurrent=1)
    except BaseException as exc:  # the check reports every failure, whatever it is
        traceback.print_exc()
        return _report(False, stage, error=f"{type(exc).__name__}: {exc}")
    finally:
        server.shutdown()
    state = states[0]
    error = state.get("error")
    return _report(error is None, "done", reward=state.get("reward"), error=error)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
