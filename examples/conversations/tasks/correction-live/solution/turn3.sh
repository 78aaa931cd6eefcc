#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-21", "amount": 40, "currency": "CNY", "category": "dining", "merchant": "Lumen Kitchen"}'
