#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" webshop.navigate --json '{"url": "/login"}' >/dev/null
"$T" webshop.type --json '{"selector": "#username", "text": "clerk"}' >/dev/null
"$T" webshop.type --json '{"selector": "#password", "text": "counter-42"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Sign in\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers?q=Ortiz"}' >/dev/null
"$T" webshop.click --json '{"selector": "text=C7"}' >/dev/null
"$T" webshop.read_page --json '{}' >/dev/null
printf '%s\n' "gold" > answer.txt
