"""Valid tokens' principals, remembered for one catalogue generation (``changes.ChangeCounter``).

An authenticated hot read (``api_reads``) would otherwise spend two of its queries on the token and the
user's memberships. Everything that changes who a token is (a revocation, a new membership) or ends a
web session (a logout; ``services.web_sessions``) bumps the catalogue generation in its own transaction,
and every request reads the counter after it arrived, so a revoked token is refused, and a logged-out
session cookie signed out, by every worker from the next request on. Expiry (a session's: the earlier of
its own and its token's) is checked against the clock on each use. A web session's check is kept under
the hash of its id, as a token's under the hash of the token. Only valid credentials are kept (keyed by
their hash, like the database): an invalid one takes the full lookup each time, as before. Used from the event loop only, so it needs no lock.

``answers`` holds the hot reads' 200s made for signed-in callers under the same generation, keyed by
what the caller may read (``lookups.visibility_key``: everything for an admin token, else the public
environments plus those of its namespaces) and the URL; these answers depend on the caller only
through that. A caller is answered from it only after its token was found valid here.
"""

from __future__ import annotations

from hub_server.api_cache import ApiCache
from hub_server.auth import TokenCheck, hash_token

#: Distinct tokens kept; beyond that the cache starts over (the bound only stops unbounded growth).
MAX_ENTRIES = 4096


class PrincipalCache:
    def __init__(self, *, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self.generation: int | None = None
        self._checks: dict[str, TokenCheck] = {}
        self.answers = ApiCache()

    def __len__(self) -> int:
        return len(self._checks)

    def observe(self, generation: int) -> None:
        """Forget everything if anything changed since the principals were kept."""
        if generation != self.generation:
            self._checks.clear()
            self.generation = generation
        self.answers.observe(generation)

    def get(self, token: str) -> TokenCheck | None:
        check = self._checks.get(hash_token(token))
        return None if check is None or check.expired() else check

    def put(self, generation: int, token: str, check: TokenCheck) -> None:
        # A lookup made under an older generation than the cache now holds is dropped, never kept.
        if generation != self.generation:
            return
        if len(self._checks) >= self.max_entries:
            self._checks.clear()
        self._checks[hash_token(token)] = check
