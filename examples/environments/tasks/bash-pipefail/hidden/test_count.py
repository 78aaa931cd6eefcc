def test_count():
    assert open("/workspace/errors.txt").read().strip() == "2"
