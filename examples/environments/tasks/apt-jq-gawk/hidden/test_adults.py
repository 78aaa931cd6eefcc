import os
import shutil


def test_adults():
    assert open("/workspace/adults.txt").read().split() == ["ada", "cy"]


def test_tools_are_the_images():
    assert shutil.which("gawk") and shutil.which("jq") and os.path.exists("/usr/bin/sqlite3")
