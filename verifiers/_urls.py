"""URLs as the SDK shows them: without the credentials a URL may carry (``https://user:secret@host/``).

Every message, log line or printed line that names a base URL, hub URL, index URL or file URL goes
through ``redact_url``; the URL itself, with its credentials, is still what requests are sent to.
"""

from __future__ import annotations

import re

# ``scheme://userinfo@``: userinfo runs to the last ``@`` before the host's end (``/``, ``?``, ``#``,
# whitespace), as urllib and httpx split it, so a password holding ``@`` is hidden whole.
_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")
REDACTED = "***@"


def redact_url(text: object) -> str:
    """``text`` (a URL, or a message holding URLs) with the userinfo of every URL in it replaced by
    ``***``: ``https://u:p@hub.example/x`` becomes ``https://***@hub.example/x``."""
    return _USERINFO.sub(REDACTED, str(text))


__all__ = ["REDACTED", "redact_url"]
