#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.list_entries merchant="Fresh Field Market"
"$ASSAY_TOOL" ledger.amend_entry id=e2 category=household
