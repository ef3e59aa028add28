# SPDX-License-Identifier: GPL-2.0-only
# A shallow-chain Python load for bench/engine.sh (FK_BENCH_LOAD=stdlib):
# Debian's python3 doing ordinary standard-library work -- JSON, regular
# expressions, text wrapping, diffs, decimals, e-mail parsing, ast, csv,
# statistics, fractions, ipaddress, urllib -- for SECONDS. Its chains are
# 5-25 frames of many different functions, unlike the deep recursion of
# bench/unwind.sh's busy.py: the Python gate's program (capture/pygate.c)
# then looks up many code objects a sample, and at the default 99 Hz
# everything it touches is cold.
#   python3 pystdlib.py SECONDS
import ast
import csv
import datetime
import decimal
import difflib
import email.parser
import fractions
import io
import ipaddress
import json
import random
import re
import statistics
import string
import sys
import textwrap
import time
import urllib.parse

end = time.monotonic() + float(sys.argv[1])
rnd = random.Random(1)
src = open(textwrap.__file__).read()
words = ["".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(2, 9)))
         for _ in range(2000)]
msg = "From: a@b.example\nTo: c@d.example\nSubject: hi\n\n" + " ".join(words[:300])
while time.monotonic() < end:
    d = {w: [rnd.random(), w.upper(), {"k": i}] for i, w in enumerate(words[:400])}
    json.loads(json.dumps(d))
    re.findall(r"\b[a-f]\w+", " ".join(words))
    textwrap.fill(" ".join(words[:500]), 60)
    list(difflib.unified_diff(words[:200], words[5:205]))
    sum(decimal.Decimal(i) / 7 for i in range(300))
    email.parser.Parser().parsestr(msg)
    ast.parse(src)
    f = io.StringIO()
    csv.writer(f).writerows([words[i:i + 5] for i in range(0, 500, 5)])
    statistics.stdev(rnd.random() for _ in range(500))
    sum(fractions.Fraction(i, i + 1) for i in range(1, 200))
    [ipaddress.ip_address("10.0.%d.%d" % (i // 256, i % 256)) for i in range(300)]
    [urllib.parse.urlparse("https://x.example/%s?q=%s" % (w, w)) for w in words[:300]]
    datetime.datetime(2020, 1, 1) + datetime.timedelta(days=rnd.randint(1, 1000))
