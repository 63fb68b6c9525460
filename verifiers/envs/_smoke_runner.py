"""The program a smoke check runs inside its sandbox (stdlib only until the worker imports the SDK).

Shipped into the sandbox as a file and run by the throwaway venv's interpreter, in two processes:

- the **supervisor** (``runner.py ENV_ID``) reads the check's one-time key from stdin, makes itself
  non-dumpable (so no other process of the sandbox can read its memory or open its file descriptors),
  serves a tiny OpenAI-compatible model on the sandbox's own loopback and starts the worker. Every reply
  of that model carries a fresh random tag (``[smoke reply <hex>]``) that only the supervisor knows until
  it sends it;
- the **worker** (``runner.py --worker ENV_ID BASE_URL FD``) imports the SDK, loads the environment
  with its defaults, runs one rollout against that model and writes what it saw, one JSON object, to the
  pipe ``FD``: the stage it reached, the error, the reward and the reply tags found in the rollout's
  completion. Its stdout and stderr go to the supervisor, never to the check's output directly.

The verdict is the supervisor's alone. The worker runs the environment's code, so everything it writes is a
claim, never a verdict (an ``"ok"`` in it is ignored): the supervisor passes the check only when the worker
exited 0, claims no error, a finite reward and a completion holding at least one reply tag, and every tag it
claims is one the supervisor's model really sent. An environment that writes a passing outcome itself and
makes a request of its own therefore still fails unless it hands back the replies of a rollout the model
answered: the check's question (does the environment load and roll out?) is then answered by what the
supervisor observed.

Only the supervisor writes the report, the check's last line: ``VF-SMOKE-REPORT <key> {json}`` with
``{"ok", "stage", "error", "reward", "model_requests"}``. The worker never sees the key, so nothing the
environment prints, writes or exits with can forge that line: no key, no report, and ``smoke_check`` counts
a missing report as a failure.

Never imported: ``smoke_check`` reads this file's bytes and uploads it into the sandbox as ``runner.py``.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
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
REPLY_TAG = re.compile(r"\[smoke reply ([0-9a-f]{32})\]")
OUTPUT_KEPT = 48 * 1024  # bytes of the worker's output the supervisor passes on (the tail)
_PR_SET_DUMPABLE = 4


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
        tag = secrets.token_hex(16)
        self.server.tags.add(tag)  # type: ignore[attr-defined]
        reply = f"{FIXED_REPLY} [smoke reply {tag}]"
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {}
        created = int(time.time())
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if self.path.rstrip("/").endswith("/completions") and "messages" not in request:
            choice: dict[str, Any] = {"index": 0, "text": reply, "finish_reason": "stop"}
            kind = "text_completion"
        else:
            message = {"role": "assistant", "content": reply}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            kind = "chat.completion"
        if request.get("stream"):
            delta = {
                "index": 0,
                "delta": {"role": "assistant", "content": reply},
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
    """Load the environment and run one rollout; what happened goes to the pipe ``fd``, nowhere else.
    It is a claim the supervisor checks against what its model sent (``judge``), not a verdict."""
    channel = os.fdopen(fd, "w")

    def outcome(stage: str, **extra: Any) -> int:
        channel.write(json.dumps({"stage": stage, **extra}, default=str))
        channel.close()
        return 0

    stage = "import verifiers"
    try:
        import verifiers as vf

        stage = "load_environment"
        env = vf.load_environment(env_id)
        stage = "select a row"
        rows = env.select_rows(1)
        if not rows:
            return outcome(stage, error="the environment's eval split has no rows")
        stage = "rollout"
        states = env.generate(rows, base_url, MODEL, rollouts_per_example=1, max_concurrent=1)
    except BaseException as exc:  # the check reports every failure, whatever it is
        traceback.print_exc()
        return outcome(stage, error=f"{type(exc).__name__}: {exc}")
    state = states[0]
    replies = REPLY_TAG.findall(json.dumps(state.get("completion"), default=str))
    return outcome("done", reward=state.get("reward"), error=state.get("error"), replies=replies)


def judge(claim: object, status: int, requests: int, sent: set[str]) -> dict[str, Any]:
    """The verdict, from what the supervisor observed: the worker's exit ``status``, the ``requests`` its
    model answered and the reply tags it ``sent``; the worker's ``claim`` is checked against them."""
    if not isinstance(claim, dict):
        return {"ok": False, "stage": "run", "error": f"the environment's process exited with status "
                f"{status} without reporting an outcome"}  # fmt: skip
    stage, error = str(claim.get("stage") or "run"), claim.get("error")
    reward, replies = claim.get("reward"), claim.get("replies")
    if error is not None or stage != "done":
        return {"ok": False, "stage": stage, "error": str(error or "the rollout did not finish")}
    failed = {"ok": False, "stage": "rollout", "reward": reward}
    if status != 0:
        return {**failed, "error": f"the environment's process exited with status {status}"}
    if requests == 0:
        return {**failed, "error": "the rollout never called the model"}
    if not isinstance(reward, int | float) or isinstance(reward, bool) or not math.isfinite(reward):
        return {**failed, "error": f"the rollout has no finite reward (got {reward!r})"}
    if not isinstance(replies, list) or not replies:
        return {**failed, "error": "the rollout's completion holds none of the model's replies"}
    if not set(map(str, replies)) <= sent:
        return {**failed, "error": "the rollout's completion holds replies the model never sent"}
    return {"ok": True, "stage": "done", "reward": reward, "error": None}


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
    server.tags = set()  # type: ignore[attr-defined]
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
        claim = json.loads(raw) if raw else None
    except ValueError:
        claim = None
    requests = server.requests  # type: ignore[attr-defined]
    report = judge(claim, status, requests, server.tags)  # type: ignore[attr-defined]
    report["model_requests"] = requests
    sys.stdout.write(f"\n{REPORT_MARK} {key} {json.dumps(report, default=str)}\n")
    sys.stdout.flush()
    return 0 if report.get("ok") else 1


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    sys.exit(supervise(sys.argv[1]))
