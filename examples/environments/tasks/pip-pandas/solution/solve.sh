#!/bin/sh
set -eu
cd "$ASSAY_WORKSPACE"
python3 -c '
import pandas as pd
df = pd.read_csv("sales.csv")
df.groupby("region", as_index=False)["amount"].sum().sort_values("region").to_csv("totals.csv", index=False)
'
