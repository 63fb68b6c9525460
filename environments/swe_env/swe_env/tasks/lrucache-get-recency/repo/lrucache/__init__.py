"""An LRU cache."""

from lrucache.core import LRUCache, memoize

__all__ = ["LRUCache", "memoize"]
