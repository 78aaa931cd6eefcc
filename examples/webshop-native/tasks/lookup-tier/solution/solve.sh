#!/bin/sh
# The reference solution, as a browser would do it: every request goes to the served app
# (logged and gated by the harness on its side); the answer is read off the customer's page.
set -eu
python3 - <<'PY'
import http.cookiejar, os, re, urllib.parse, urllib.request
base = os.environ["ASSAY_WEBSHOP_URL"]
web = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
form = urllib.parse.urlencode({"username": "clerk", "password": "counter-42", "next": "/"}).encode()
web.open(base + "/login", form).read()
web.open(base + "/customers?q=Ortiz").read()
page = web.open(base + "/customers/C7").read().decode()
tier = re.search(r"\b(basic|silver|gold)\b", page).group(1)
open("answer.txt", "w").write(tier + "\n")
PY
