#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" webshop.navigate --json '{"url": "/login"}' >/dev/null
"$T" webshop.type --json '{"selector": "#username", "text": "clerk"}' >/dev/null
"$T" webshop.type --json '{"selector": "#password", "text": "counter-42"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Sign in\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers"}' >/dev/null
"$T" webshop.click --json '{"selector": "text=Next"}' >/dev/null
"$T" webshop.click --json '{"selector": "text=Next"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers/C3"}' >/dev/null
"$T" webshop.type --json '{"selector": "#note-body", "text": "VIP follow-up"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Add note\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers/C7"}' >/dev/null
"$T" webshop.type --json '{"selector": "#note-body", "text": "VIP follow-up"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Add note\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers/C11"}' >/dev/null
"$T" webshop.type --json '{"selector": "#note-body", "text": "VIP follow-up"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Add note\"]"}' >/dev/null
