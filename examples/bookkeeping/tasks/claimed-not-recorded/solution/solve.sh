#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-20", "amount": 86, "currency": "CNY", "category": "dining", "merchant": "Lumen Kitchen"}'
