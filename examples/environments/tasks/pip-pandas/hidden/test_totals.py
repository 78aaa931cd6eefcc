import sys

import pandas as pd


def test_totals():
    df = pd.read_csv("/workspace/totals.csv")
    assert list(df.columns) == ["region", "amount"]
    assert dict(zip(df.region, df.amount)) == {"east": 1.0, "north": 12.5, "south": 5.0}


def test_the_images_python():
    assert sys.executable.startswith("/usr/bin/python3")
