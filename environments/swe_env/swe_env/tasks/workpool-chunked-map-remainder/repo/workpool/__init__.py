"""A small pool of worker threads."""

from workpool.pool import WorkPool, chunks

__all__ = ["WorkPool", "chunks"]
