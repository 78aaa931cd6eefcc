#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.list_entries date_from=2026-03-01 >/dev/null
"$ASSAY_TOOL" ledger.record_entry date=2026-03-18 amount=42 currency=CNY category=transport merchant="Metro Line 4"
