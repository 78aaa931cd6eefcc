#!/bin/sh
set -eu
"$ASSAY_TOOL" user.ask_clarification --json '{"question": "Which category is Xinghe Trading?", "reason_code": "ambiguous_merchant"}'
