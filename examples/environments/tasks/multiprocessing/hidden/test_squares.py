import squares


def test_squares_file():
    assert open("/workspace/squares.txt").read().split() == [str(i * i) for i in range(10)]


def test_pool_in_the_verifier():
    assert squares.main() == [i * i for i in range(10)]
