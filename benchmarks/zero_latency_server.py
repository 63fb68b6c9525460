"""A zero-latency OpenAI-compatible server for throughput benchmarks.

Raw asyncio HTTP/1.1 with keep-alive and one canned completion, so the server costs as little as possible
and the benchmark measures the client side. Run: ``python benchmarks/zero_latency_server.py PORT``.
"""

from __future__ import annotations

import asyncio
import sys

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


class _Proto(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.t = transport
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data
        out = []
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buf[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            total = end + 4 + length
            if len(buf) < total:
                break
            buf = buf[total:]
            out.append(_RESPONSE)
        self.buf = buf
        if out:
            self.t.write(b"".join(out))  # type: ignore[attr-defined]


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Proto, "127.0.0.1", port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
