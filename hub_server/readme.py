"""READMEs as safe HTML: rendered once, at publish, in a limited child process, and stored with the version.

markdown-it-py renders the markdown (raw HTML allowed), then nh3 sanitises it. The sanitiser's HTML5 tree
builder walks the stack of open elements for each tag, so its time grows with nesting times length: a
120 KB README of 24,000 nested ``<div>`` s took 70-90 s per view. So:

- the nesting of the HTML markdown-it produces is counted in one pass and more than ``MAX_DEPTH`` levels
  are refused (markdown's own nesting is capped by markdown-it's ``maxNesting``);
- rendering runs in a child (``python -I -m hub_server.readme``, 512 MiB of address space, 10 s of CPU,
  20 s of wall time); a child that does not finish is a refusal naming the limit, never a hung thread;
- the HTML is stored (``versions.readme_html``): a page view, for any ``?version=``, only reads it.

Images load only from the hub itself: a markdown image from elsewhere becomes a link, and a raw ``<img>``
from elsewhere loses its ``src``. "Elsewhere" is decided as browsers decide it, by the WHATWG URL standard
(ada-url), against the page's URL over http and over https, so ``\\\\host/x``, ``/\\host/x``,
``/<TAB>/host/x`` or ``https:host/x`` (all other hosts to a browser) never pass; only paths with a single
leading ``/`` (or none) do.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from functools import lru_cache
from html import escape
from html.parser import HTMLParser
from typing import Any

from hub_server.bounded import UploadError
from hub_server.child import run_json_child

#: Deepest nesting of HTML elements a README may have (hand-written READMEs stay under 20).
MAX_DEPTH = 100
_CHILD_MEMORY = 512 * 1024 * 1024
_CHILD_CPU_SECONDS = 10
_TIMEOUT = 20.0
_MARKDOWN = ("text/markdown", "text/x-markdown", "")
# Pages the README appears on, as a browser resolves its URLs (the host name is never a real one).
_PAGE_URLS = ("https://hub.invalid/owner/name", "http://hub.invalid/owner/name")
_VOID = frozenset(
    ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]
)  # fmt: skip
# Elements whose end tag HTML may leave out: a new one closes the open one instead of nesting in it.
_SELF_CLOSING_SIBLINGS = frozenset(
    [
        "p",
        "li",
        "dt",
        "dd",
        "option",
        "optgroup",
        "tr",
        "td",
        "th",
        "thead",
        "tbody",
        "tfoot",
        "rb",
        "rt",
        "rp",
    ]
)
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")


class TooDeep(ValueError):
    """The HTML nests more than ``MAX_DEPTH`` elements (counting stops there)."""


def same_origin(src: str) -> bool:
    """Whether a browser showing a hub page loads ``src`` from the hub itself (WHATWG URL parsing)."""
    import ada_url

    text = _TAB_OR_NEWLINE.sub("", src).strip("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f"
                                            "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")  # fmt: skip
    if text[:2].replace("\\", "/") == "//":
        return False  # a scheme-relative URL, however its slashes are spelt: only single-'/' paths
    for page in _PAGE_URLS:
        try:
            url = ada_url.URL(src, base=page)
        except ValueError:
            return False
        if url.origin != ada_url.URL(page).origin:
            return False
    return True


def _image(self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
    # An image from another host would tell that host who reads the page (and when): link to it instead.
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    if same_origin(src):
        return f'<img src="{escape(src)}" alt="{escape(alt)}">'
    return f'<a href="{escape(src)}">{escape(alt or src)}</a>'


def _local_images_only(tag: str, attr: str, value: str) -> str | None:
    if tag == "img" and attr == "src" and not same_origin(value):
        return None
    return value


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    md.add_render_rule("image", _image)
    return md


class _Depth(HTMLParser):
    """The deepest element nesting of an HTML text, in one pass (each element is pushed and popped once)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.open: dict[str, int] = {}
        self.deepest = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        if tag in _SELF_CLOSING_SIBLINGS and self.stack and self.stack[-1] == tag:
            self._pop()
        self.stack.append(tag)
        self.open[tag] = self.open.get(tag, 0) + 1
        self.deepest = max(self.deepest, len(self.stack))
        if self.deepest > MAX_DEPTH:
            raise TooDeep(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.open.get(tag):
            while self._pop() != tag:
                pass

    def _pop(self) -> str:
        tag = self.stack.pop()
        self.open[tag] -= 1
        return tag


def render(text: str, content_type: str) -> str:
    """The README as sanitised HTML, in this process (the child's work; ``TooDeep`` past ``MAX_DEPTH``)."""
    import nh3

    if not text.strip():
        return "<p><em>No README.</em></p>"
    if content_type not in _MARKDOWN:
        return f"<pre>{escape(text)}</pre>"
    html = _markdown().render(text)
    depth = _Depth()
    depth.feed(html)
    depth.close()
    return nh3.clean(html, link_rel="noopener noreferrer nofollow", attribute_filter=_local_images_only)


def render_limited(text: str, content_type: str, where: str = "the README") -> str:
    """``render`` in a child with memory, CPU and time limits; ``UploadError`` saying what to change."""
    if not text.strip() or content_type not in _MARKDOWN:
        return render(text, content_type)  # escaping is linear: no child needed
    payload = json.dumps({"text": text, "content_type": content_type}).encode()
    argv = ["-m", "hub_server.readme", str(_CHILD_MEMORY), str(_CHILD_CPU_SECONDS)]
    result = run_json_child(argv, payload, timeout=_TIMEOUT)
    if result is not None and "too_deep" in result:
        raise UploadError(
            f"{where} nests HTML elements more than {MAX_DEPTH} levels deep (at a <{result['too_deep']}>); "
            "the hub renders at most that: flatten its raw HTML"
        )
    if result is None or not isinstance(result.get("html"), str):
        raise UploadError(
            f"{where} could not be rendered within the hub's limits ({_CHILD_CPU_SECONDS} s of CPU, "
            f"{_CHILD_MEMORY // 2**20} MiB): simplify its raw HTML or shorten it"
        )
    return str(result["html"])


def _child_main() -> None:
    import resource

    memory, cpu = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    request = json.loads(sys.stdin.buffer.read())
    try:
        out: dict[str, object] = {"html": render(request["text"], request["content_type"])}
    except TooDeep as exc:
        out = {"too_deep": str(exc)}
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    _child_main()
