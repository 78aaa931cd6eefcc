#!/bin/sh
# The reference solution retries under one idempotency key: a retry can never book twice.
set -u
for i in 1 2 3; do
  "$ASSAY_TOOL" ledger.record_entry --json '{"date": "2026-04-02", "amount": 58, "currency": "CNY", "category": "dining", "merchant": "Harbor Dumpling House", "idempotency_key": "lunch-2026-04-02"}' && exit 0
done
exit 1
