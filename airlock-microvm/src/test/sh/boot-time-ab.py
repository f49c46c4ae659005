#!/usr/bin/env python3
"""boot-time-ab.py ROUNDS 'name=<boot-time.py args>' ...: interleaved boots, median and min of wall and CPU time per command line."""
import subprocess, sys, shlex, statistics, re, os
rounds = int(sys.argv[1]); configs = [c.split('=', 1) for c in sys.argv[2:]]
res = {n: [] for n, _ in configs}
for r in range(rounds):
    for n, args in configs:
        out = subprocess.run(['python3', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'boot-time.py'), '--quiet'] + shlex.split(args), capture_output=True, text=True).stdout
        m = re.search(r'HELLO ([\d.]+) s cpu ([\d.]+)', out)
        res[n].append((float(m.group(1)), float(m.group(2))) if m else (99.0, 99.0))
    print('round', r, os.getloadavg()[0], {n: v[-1] for n, v in res.items()}, flush=True)
for n, v in res.items():
    w = [x[0] for x in v]; c = [x[1] for x in v]
    print('%-12s wall median %.2f min %.2f | cpu median %.2f min %.2f' % (n, statistics.median(w), min(w), statistics.median(c), min(c)))
