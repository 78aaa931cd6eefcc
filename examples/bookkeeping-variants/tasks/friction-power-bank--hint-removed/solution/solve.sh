#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.list_categories >/dev/null
"$ASSAY_TOOL" ledger.record_entry date=2026-03-16 amount=129 currency=CNY category=shopping merchant="Lumen Electronics"
