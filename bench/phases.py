#!/usr/bin/env python3
"""When each role reaches each step of an iteration, from a consortium's debug log.

Usage:
    RUST_LOG=vtwin_consortium=debug vtwin bench --workload adult --iters 100 \
        --backends mpc-quic --out /tmp/b.json 2> /tmp/phase.log
    bench/phases.py /tmp/phase.log [--skip 10]

For every iteration after the first `--skip` ones, it takes the coordinator's "iteration
started" line as time 0 and prints, per role and event (a party's request received, part 0
sealed, part 1 sealed; a node's session started, node keys in, each party's part unsealed,
session finished), the median time in ms across iterations, in order. The logging itself
slows an iteration by a few percent, so read the phases against each other, not as the
iteration's time.
"""

import argparse
import collections
import datetime
import re
import statistics

EVENTS = [
    ("request received", "request received"),
    ("part 0 sealed", "inputs sealed"),
    ("part 1 sealed", "late upload sealed"),
    ("session started", "session started"),
    ("node keys in", "all node keys in"),
    ("session finished", "session finished node"),
]
UNSEALED = re.compile(r"inputs unsealed node=node (\d) party=(\d+) part=(\w+)")
SPAN = re.compile(r"iteration\{t=(\d+)(?: party=party (\d+)| node=(\d))?")
STARTED = re.compile(r"iteration started iteration=(\d+)")
LINE = re.compile(r"(\S+Z)\s+\w+\s+(.*)")


def millis(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--skip", type=int, default=10, help="warm-up iterations to leave out")
    args = ap.parse_args()
    start = {}
    seen = collections.defaultdict(dict)
    with open(args.log, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            t, rest = millis(m.group(1)), m.group(2)
            s = STARTED.search(rest)
            if s:
                start[int(s.group(1))] = t
                continue
            s = SPAN.search(rest)
            if not s:
                continue
            it = int(s.group(1))
            who = (
                f"party {s.group(2)}"
                if s.group(2)
                else f"node {s.group(3)}"
                if s.group(3)
                else "coordinator"
            )
            for name, pattern in EVENTS:
                if pattern in rest:
                    seen[it][(who, name)] = t
            u = UNSEALED.search(rest)
            if u:
                seen[it][(f"node {u.group(1)}", f"party {u.group(2)} {u.group(3)} unsealed")] = t
    offsets = collections.defaultdict(list)
    for it, events in seen.items():
        if it not in start or it < args.skip:
            continue
        for key, t in events.items():
            offsets[key].append(t - start[it])
    if not offsets:
        raise SystemExit(f"{args.log}: no iterations with debug events after --skip {args.skip}")
    rows = sorted(offsets.items(), key=lambda kv: statistics.median(kv[1]))
    print(f"{'role':<12} {'event':<28} {'median ms':>9}  iterations")
    for (who, name), values in rows:
        print(f"{who:<12} {name:<28} {statistics.median(values):>9.2f}  {len(values)}")


if __name__ == "__main__":
    main()
