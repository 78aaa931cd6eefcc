#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-22", "amount": 45, "currency": "CNY", "category": "transport", "merchant": "Blue Cab"}'
