#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" webshop.navigate --json '{"url": "/login"}' >/dev/null
"$T" webshop.type --json '{"selector": "#username", "text": "clerk"}' >/dev/null
"$T" webshop.type --json '{"selector": "#password", "text": "counter-42"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Sign in\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/orders/O3"}' >/dev/null
"$T" webshop.read_page --json '{}' >/dev/null
"$T" webshop.type --json '{"selector": "#amount", "text": "89.90"}' >/dev/null
"$T" webshop.type --json '{"selector": "#reason", "text": "damaged"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Review refund\"]"}' >/dev/null
"$T" webshop.click --json '{"selector": "#confirm"}' >/dev/null
"$T" webshop.screenshot --json '{"label": "refunded"}' >/dev/null
