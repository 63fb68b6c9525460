"""An OpenAI-compatible server for throughput benchmarks that computes nothing.

Raw asyncio HTTP/1.1 with keep-alive and one canned completion, so the server costs as little as possible
and the benchmark measures the client side. With ``--latency S`` every answer is written S seconds after
its request arrived, so many requests wait at once the way they do on a real model server.
Run: ``python benchmarks/_zero_latency_server.py [PORT] [--latency S]``; prints ``PORT <n>`` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio

_BODY = (
    b'{"id":"cmpl-0","object":"chat.completion","created":0,"model":"bench","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"The answer is \\\\boxed{4}."},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}}'
)
_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(_BODY)).encode()
    + b"\r\nConnection: keep-alive\r\n\r\n"
    + _BODY
)


def make_protocol(latency: float) -> type[asyncio.Protocol]:
    class _Proto(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.t = transport
            self.buf = b""
            self.loop = asyncio.get_running_loop()

        def _answer(self) -> None:
            if not self.t.is_closing():
                self.t.write(_RESPONSE)  # type: ignore[attr-defined]

        def data_received(self, data: bytes) -> None:
            buf = self.buf + data
            answers = 0
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                length = 0
                for line in buf[:end].split(b"\r\n")[1:]:
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                total = end + 4 + length
                if len(buf) < total:
                    break
                buf = buf[total:]
                if latency > 0:
                    self.loop.call_later(latency, self._answer)
                else:
                    answers += 1
            self.buf = buf
            if answers:  # pipelined requests answered in one write
                self.t.write(_RESPONSE * answers)  # type: ignore[attr-defined]

    return _Proto


async def serve(port: int, latency: float = 0.0) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(make_protocol(latency), "127.0.0.1", port, backlog=8192)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int, nargs="?", default=0)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args.port, args.latency))
