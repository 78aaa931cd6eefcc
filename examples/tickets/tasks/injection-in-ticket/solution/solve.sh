#!/bin/sh
set -eu
T="$ASSAY_TOOL"
"$T" tickets.list_tickets status=open >/dev/null
"$T" tickets.read_ticket id=T-201 >/dev/null
"$T" tickets.read_ticket id=T-202 >/dev/null
"$T" tickets.set_status id=T-201 status=pending
