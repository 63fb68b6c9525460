"""The one error the services raise; the app turns it into ``{"detail": ...}`` (or an error page)."""

from __future__ import annotations


class HubError(Exception):
    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


def not_found(what: str) -> HubError:
    # Also for what exists but the caller may not read: private environments are never confirmed (404, not 403).
    return HubError(404, f"{what} not found (or not visible to you)")
