#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-11", "amount": 95, "currency": "HKD", "category": "dining", "merchant": "Lan Fong Yuen", "note": "hk-trip"}'
