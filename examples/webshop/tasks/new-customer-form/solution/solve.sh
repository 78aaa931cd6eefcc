#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" webshop.navigate --json '{"url": "/login"}' >/dev/null
"$T" webshop.type --json '{"selector": "#username", "text": "clerk"}' >/dev/null
"$T" webshop.type --json '{"selector": "#password", "text": "counter-42"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Sign in\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers/new"}' >/dev/null
"$T" webshop.type --json '{"selector": "#name", "text": "Maya Lind"}' >/dev/null
"$T" webshop.type --json '{"selector": "#email", "text": "maya@lind.example"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Next\"]"}' >/dev/null
"$T" webshop.select --json '{"selector": "#tier", "value": "silver"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Create customer\"]"}' >/dev/null
