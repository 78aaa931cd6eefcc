#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.delete_entry id=e2
