#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-15", "amount": 350, "currency": "CNY", "category": "household", "merchant": "Xinghe Trading"}'
