#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" webshop.navigate --json '{"url": "/login"}' >/dev/null
"$T" webshop.type --json '{"selector": "#username", "text": "clerk"}' >/dev/null
"$T" webshop.type --json '{"selector": "#password", "text": "counter-42"}' >/dev/null
"$T" webshop.click --json '{"selector": "role=button[name=\"Sign in\"]"}' >/dev/null
"$T" webshop.navigate --json '{"url": "/customers?q=Smith"}' >/dev/null
"$T" webshop.read_page --json '{}' >/dev/null
"$T" user.ask_clarification --json '{"question": "Two customers are named Smith (C4 Jane Smith, C6 John Smith), both with a candle set order. Which one?", "reason_code": "ambiguous_customer"}' >/dev/null
