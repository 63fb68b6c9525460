import pytest

from matrixlib import Matrix


def test_shape_and_indexing():
    m = Matrix([[1, 2, 3], [4, 5, 6]])
    assert m.shape == (2, 3)
    assert m[1, 2] == 6


def test_ragged_rows_rejected():
    with pytest.raises(ValueError):
        Matrix([[1, 2], [3]])
    with pytest.raises(ValueError):
        Matrix([])


def test_add():
    assert Matrix([[1, 2]]) + Matrix([[3, 4]]) == Matrix([[4, 6]])
    with pytest.raises(ValueError):
        Matrix([[1, 2]]) + Matrix([[1], [2]])


def test_matmul():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[0, 1], [1, 0]])
    assert a @ b == Matrix([[2, 1], [4, 3]])
    with pytest.raises(ValueError):
        a @ Matrix([[1, 2, 3]])


def test_transpose():
    assert Matrix([[1, 2, 3], [4, 5, 6]]).transpose() == Matrix([[1, 4], [2, 5], [3, 6]])


def test_scale_and_trace():
    assert Matrix([[1, 2], [3, 4]]).scale(2) == Matrix([[2, 4], [6, 8]])
    assert Matrix([[1, 2], [3, 4]]).trace() == 5


def test_determinant():
    assert Matrix([[1, 2], [3, 4]]).determinant() == -2
    assert Matrix([[2, 0, 1], [1, 3, 2], [1, 1, 2]]).determinant() == 6
    assert Matrix([[1, 2], [2, 4]]).determinant() == 0
    assert Matrix([[0, 1], [1, 0]]).determinant() == -1


def test_zeros():
    assert Matrix.zeros(2, 3).shape == (2, 3)
