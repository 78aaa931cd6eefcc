#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.list_entries
