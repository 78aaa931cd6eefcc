#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-18", "amount": 600, "currency": "CNY", "category": "entertainment", "merchant": "Golden Reef Casino"}'
