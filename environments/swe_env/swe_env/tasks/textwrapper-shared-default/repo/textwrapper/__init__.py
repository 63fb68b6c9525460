"""Text wrapping helpers."""

from textwrapper.core import columns, fill, justify, shorten, wrap

__all__ = ["columns", "fill", "justify", "shorten", "wrap"]
