"""Small dense matrices."""

from matrixlib.core import Matrix

__all__ = ["Matrix"]
