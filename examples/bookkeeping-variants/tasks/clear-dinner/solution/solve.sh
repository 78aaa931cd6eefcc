#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-03-14", "amount": 186, "currency": "CNY", "category": "dining", "merchant": "Harbor Dumpling House", "idempotency_key": "dinner-2026-03-14"}'
