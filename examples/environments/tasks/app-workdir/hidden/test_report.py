import os


def test_report_at_absolute_path():
    assert open("/app/report.txt").read().split("\n")[:2] == ["ok", "image file"]


def test_workspace_is_at_app():
    assert os.path.exists("/app/input.txt")
    assert open("/opt/app/arg.txt").read().strip() == "hello"
