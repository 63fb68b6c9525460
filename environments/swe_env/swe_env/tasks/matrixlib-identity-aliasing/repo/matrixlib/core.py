"""Small dense matrices of numbers (lists of rows)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

Number = int | float | Fraction


class Matrix:
    def __init__(self, rows: Sequence[Sequence[Number]]) -> None:
        if not rows or not rows[0]:
            raise ValueError("a matrix needs at least one row and one column")
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise ValueError("rows have different lengths")
        self.rows: list[list[Number]] = [list(r) for r in rows]

    @classmethod
    def identity(cls, n: int) -> Matrix:
        rows = [[0] * n] * n
        for i in range(n):
            rows[i][i] = 1
        return cls(rows)

    @classmethod
    def zeros(cls, n_rows: int, n_cols: int) -> Matrix:
        return cls([[0] * n_cols for _ in range(n_rows)])

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0])

    def __getitem__(self, index: tuple[int, int]) -> Number:
        r, c = index
        return self.rows[r][c]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Matrix) and self.rows == other.rows

    def __add__(self, other: Matrix) -> Matrix:
        if self.shape != other.shape:
            raise ValueError(f"shapes {self.shape} and {other.shape} differ")
        return Matrix([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(self.rows, other.rows)])

    def __matmul__(self, other: Matrix) -> Matrix:
        n, m = self.shape
        m2, p = other.shape
        if m != m2:
            raise ValueError(f"cannot multiply {self.shape} by {other.shape}")
        return Matrix([[sum(self.rows[i][k] * other.rows[k][j] for k in range(m)) for j in range(p)] for i in range(n)])

    def scale(self, factor: Number) -> Matrix:
        return Matrix([[factor * x for x in r] for r in self.rows])

    def transpose(self) -> Matrix:
        n, m = self.shape
        return Matrix([[self.rows[i][j] for i in range(n)] for j in range(m)])

    def determinant(self) -> Number:
        """By Gaussian elimination over fractions (exact for int and Fraction entries)."""
        n, m = self.shape
        if n != m:
            raise ValueError("determinant of a non-square matrix")
        a = [[Fraction(x) for x in r] for r in self.rows]
        det = Fraction(1)
        for col in range(n):
            pivot = next((r for r in range(col, n) if a[r][col] != 0), None)
            if pivot is None:
                return 0
            if pivot != col:
                a[col], a[pivot] = a[pivot], a[col]
                det = -det
            det *= a[col][col]
            for r in range(col + 1, n):
                f = a[r][col] / a[col][col]
                for c in range(col, n):
                    a[r][c] -= f * a[col][c]
        return det.numerator if det.denominator == 1 else det

    def power(self, k: int) -> Matrix:
        if k < 0:
            raise ValueError("negative powers are not supported")
        n, m = self.shape
        if n != m:
            raise ValueError("power of a non-square matrix")
        result, base = Matrix.identity(n), self
        while k:
            if k & 1:
                result = result @ base
            base = base @ base
            k >>= 1
        return result

    def trace(self) -> Number:
        n, m = self.shape
        return sum(self.rows[i][i] for i in range(min(n, m)))

    def __repr__(self) -> str:
        return f"Matrix({self.rows!r})"
