#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" tickets.read_ticket id=T-101 >/dev/null
"$T" tickets.add_comment --json '{"id": "T-101", "body": "VAT number on INV-77 corrected to DE123456789."}'
"$T" outbox.send_email --json '{"to": "ana@customer.example", "subject": "T-101: VAT number corrected", "body": "Invoice INV-77 now shows VAT number DE123456789."}'
"$T" tickets.set_status id=T-101 status=resolved
