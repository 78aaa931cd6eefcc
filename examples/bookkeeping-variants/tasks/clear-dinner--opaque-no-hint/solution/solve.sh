#!/bin/sh
set -eu
"$ASSAY_TOOL" user.ask_clarification --json '{"question": "Xinghe Trading has no known category. Which category is it?", "reason_code": "ambiguous_merchant"}'
