#!/bin/sh
set -eu
"$ASSAY_TOOL" ledger.amend_entry id=e3 category=dining
