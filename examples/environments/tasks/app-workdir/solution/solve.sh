#!/bin/sh
set -eu
{ echo ok; cat /opt/app/greet.txt; } > "$APP_HOME/$REPORT_NAME"
