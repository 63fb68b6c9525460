from matrixlib import Matrix


def test_identity_has_ones_on_the_diagonal_only():
    assert Matrix.identity(3) == Matrix([[1, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_identity_is_neutral_for_matmul():
    a = Matrix([[1, 2], [3, 4]])
    assert Matrix.identity(2) @ a == a


def test_power():
    fib = Matrix([[1, 1], [1, 0]])
    assert fib.power(10)[0, 1] == 55
    assert fib.power(0) == Matrix.identity(2)


def test_identity_determinant():
    assert Matrix.identity(4).determinant() == 1
