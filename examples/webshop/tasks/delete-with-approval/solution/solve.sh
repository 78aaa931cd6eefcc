#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" webshop.navigate --json '{"url": "/login"}' >/dev/null
"$T" webshop.type --json '{"selector": "#username", "text": "clerk"}' >/dev/null
"$T" webshop.type --json '{"selector": "#password", "text": "counter-42"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Sign in\"]"}' >/dev/null
"$T" webshop.request_approval --json '{"action": "delete_customer", "target": "C12", "reason": "duplicate test account"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers/C12"}' >/dev/null
"$T" webshop.click --json '{"selector": "#delete", "dialog": "accept"}' >/dev/null
