"""The online backend against loopback servers only: a fake Serper API (request shape, key header, 429
then success, persistent 500 → infra error) and a tiny web site (HTML and PDF extraction, redirects, size
cap, disk cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from deep_research_env import DiskCache, PageFetcher, SearchUnavailableError, SerperBackend, load_environment
from deep_research_env.env import DeepResearchEnv
from deep_research_env.scoring import DeepResearchRubric

from tests.scripted_server import Reply, ScriptedServer, tool_call


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica, with a correct cross-reference table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


ARTICLE = """<!doctype html><html><head><title>The Velmora Lighthouse</title>
<style>.x{color:red}</style><script>var tracking = "do not index me";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>The Velmora Lighthouse</h1>
<p>The Velmora Lighthouse was first lit in 1861 and stands 42 metres tall on the northern cape.</p>
<p>Its keeper for thirty years was Ada Brennock, who logged every passing ship in a leather book.</p>
<p>The lamp was converted to electricity in 1931, and the tower is now a small maritime museum.</p>
</article><footer>Copyright notice</footer></body></html>"""


async def test_serper_request_shape_retry_and_cache(serve: Any, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    answers = [web.json_response({"message": "slow down"}, status=429, headers={"Retry-After": "0"})]

    async def search(request: web.Request) -> web.StreamResponse:
        seen.append(
            {
                "key": request.headers.get("X-API-KEY"),
                "ctype": request.content_type,
                "body": await request.json(),
            }
        )
        if answers:
            return answers.pop(0)
        q = (await request.json())["q"]
        organic = [
            {
                "title": f"{q} result {i}",
                "link": f"https://example.org/{i}",
                "snippet": f"about {q}",
                "position": i,
            }
            for i in range(12)
        ]
        return web.json_response({"searchParameters": {"q": q}, "organic": organic})

    async with serve([("POST", "/search", search)]) as base:
        cache = DiskCache(tmp_path / "cache")
        backend = SerperBackend(api_key="k-123", cache=cache, endpoint=f"{base}/search", backoff=0.01)
        hits = await backend.search("velmora lighthouse", 3)
        assert [h.url for h in hits] == [
            "https://example.org/0",
            "https://example.org/1",
            "https://example.org/2",
        ]
        assert (
            hits[0].title == "velmora lighthouse result 0" and hits[0].snippet == "about velmora lighthouse"
        )
        assert len(seen) == 2  # the 429, then the retry
        assert seen[0] == {
            "key": "k-123",
            "ctype": "application/json",
            "body": {"q": "velmora lighthouse", "num": 10},
        }
        again = SerperBackend(api_key="k-123", cache=DiskCache(tmp_path / "cache"), endpoint=f"{base}/search")
        assert await again.search("velmora lighthouse", 3) == hits and len(seen) == 2  # from the disk cache
        await backend.aclose()
        await again.aclose()


async def test_serper_persistent_500_stops_the_rollout_as_infra(serve: Any, tmp_path: Path) -> None:
    calls = 0

    async def broken(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return web.json_response({"message": "boom"}, status=500)

    async with serve([("POST", "/search", broken)]) as base:
        backend = SerperBackend(
            api_key="k",
            cache=DiskCache(tmp_path, ttl=0),
            endpoint=f"{base}/search",
            max_retries=2,
            backoff=0.01,
        )
        with pytest.raises(SearchUnavailableError, match=r"after 3 attempts \(last: HTTP 500\)"):
            await backend.search("anything", 3)
        assert calls == 3
        env = DeepResearchEnv(
            backend=backend,
            eval_dataset=[{"question": "Q?", "answer": "A"}],
            rubric=DeepResearchRubric(),
            max_turns=5,
        )
        with ScriptedServer() as model:
            model.enqueue(
                Reply(content=None, tool_calls=[tool_call("search_web", {"queries": ["a", "b"]}, "s")])
            )
            run = await env.a_evaluate(model.url, "m", num_examples=1, output_dir=tmp_path / "run")
            assert len(model.requests) == 1  # the rollout stopped: no second model call
        result = run.results[0]
        assert result["error"]["category"] == "infra" and result["error"]["type"] == "SearchUnavailableError"
        assert result["reward"] is None


async def test_refused_key_is_infra_without_retry(serve: Any, tmp_path: Path) -> None:
    calls = 0

    async def refuse(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return web.json_response({"message": "Unauthorized"}, status=403)

    async with serve([("POST", "/search", refuse)]) as base:
        backend = SerperBackend(api_key="bad", cache=DiskCache(tmp_path, ttl=0), endpoint=f"{base}/search")
        with pytest.raises(SearchUnavailableError, match="HTTP 403"):
            await backend.search("x", 3)
        await backend.aclose()
    assert calls == 1


async def test_fetch_html_and_pdf_with_disk_cache(serve: Any, tmp_path: Path) -> None:
    hits: dict[str, int] = {}
    pdf = tiny_pdf("Ada Brennock kept the Velmora light")

    def counted(path: str, response: Any) -> Any:
        async def handler(request: web.Request) -> web.StreamResponse:
            hits[path] = hits.get(path, 0) + 1
            answer = response()
            if isinstance(answer, web.HTTPException):
                raise answer
            return answer

        return handler

    routes = [
        (
            "GET",
            "/article",
            counted("/article", lambda: web.Response(text=ARTICLE, content_type="text/html")),
        ),
        (
            "GET",
            "/paper.pdf",
            counted("/paper.pdf", lambda: web.Response(body=pdf, content_type="application/pdf")),
        ),
        ("GET", "/moved", counted("/moved", lambda: web.HTTPFound("/article"))),
        ("GET", "/loop", counted("/loop", lambda: web.HTTPFound("/loop"))),
        (
            "GET",
            "/big",
            counted("/big", lambda: web.Response(text="line of text\n" * 5000, content_type="text/plain")),
        ),
        ("GET", "/gone", counted("/gone", lambda: web.Response(status=404))),
    ]
    async with serve(routes) as base:
        fetcher = PageFetcher(DiskCache(tmp_path / "c"), max_bytes=20_000, max_redirects=3)
        page = await fetcher.fetch(f"{base}/article")
        assert page.title == "The Velmora Lighthouse" and page.content_type == "text/html"
        assert "first lit in 1861" in page.text and "Ada Brennock" in page.text
        assert "do not index me" not in page.text and "color:red" not in page.text
        doc = await fetcher.fetch(f"{base}/paper.pdf")
        assert doc.content_type == "application/pdf" and "Ada Brennock kept the Velmora light" in doc.text
        assert "1861" in (await fetcher.fetch(f"{base}/moved")).text  # one redirect is followed
        big = await fetcher.fetch(f"{base}/big")
        assert "[page cut at 20,000 bytes" in big.text and len(big.text) < 21_000
        for path, message in [("/loop", "too many redirects"), ("/gone", "HTTP 404"), ("/x", "HTTP 404")]:
            with pytest.raises(Exception, match=message):
                await fetcher.fetch(base + path)
        with pytest.raises(Exception, match="only http"):
            await fetcher.fetch("file:///etc/passwd")
        assert hits["/article"] == 2 and hits["/paper.pdf"] == 1  # once itself, once behind /moved
        # a second fetch, by a new fetcher sharing the cache directory, does not touch the network
        second = PageFetcher(DiskCache(tmp_path / "c"))
        assert (await second.fetch(f"{base}/article")) == page and (
            await second.fetch(f"{base}/paper.pdf")
        ) == doc
        assert hits["/article"] == 2 and hits["/paper.pdf"] == 1 and second.downloads == 0
        assert second.cache.hits == 2
        expired = PageFetcher(DiskCache(tmp_path / "c", ttl=1e-9))
        await expired.fetch(f"{base}/article")
        assert hits["/article"] == 3  # past its TTL the page is fetched again
        for f in (fetcher, second, expired):
            await f.aclose()


async def test_serper_environment_end_to_end(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def search(request: web.Request) -> web.StreamResponse:
        link = str(request.url.with_path("/article"))
        return web.json_response(
            {"organic": [{"title": "The Velmora Lighthouse", "link": link, "snippet": "..."}]}
        )

    async def article(request: web.Request) -> web.StreamResponse:
        return web.Response(text=ARTICLE, content_type="text/html")

    async with serve([("POST", "/search", search), ("GET", "/article", article)]) as base:
        monkeypatch.setenv("MY_SERPER_KEY", "k")
        questions = tmp_path / "q.jsonl"
        questions.write_text(
            json.dumps({"question": "When was the Velmora Lighthouse first lit?", "answer": "1861"}) + "\n"
        )
        env = load_environment(
            source=str(questions), backend="serper", serper_api_key_var="MY_SERPER_KEY",
            serper_url=f"{base}/search", cache_dir=str(tmp_path / "cache"),
        )  # fmt: skip
        with ScriptedServer() as model:
            model.enqueue(
                Reply(
                    content=None,
                    tool_calls=[tool_call("search_web", {"queries": ["Velmora Lighthouse"]}, "a")],
                ),
                Reply(
                    content=None,
                    tool_calls=[
                        tool_call("scan_page", {"url": f"{base}/article", "pattern": "first lit"}, "b")
                    ],
                ),
                Reply(content=None, tool_calls=[tool_call("finish", {"final_answer": "1861"}, "c")]),
            )
            run = await env.a_evaluate(model.url, "m", num_examples=1, output_dir=tmp_path / "run")
            scan_output = model.requests[2]["messages"][-1]["content"]
        assert f"URL: {base}/article" in model.requests[1]["messages"][-1]["content"]
        assert "Content type: text/html" in scan_output and "first lit in 1861" in scan_output
        assert run.errors == [] and run.results[0]["reward"] == 1.0
