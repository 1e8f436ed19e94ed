#!/usr/bin/env python3
"""Mean and sample sd over noise draws of the eval.json files that bench/utility-draws.sh wrote.

    bench/utility-summary.py RUNS/NAME [RUNS/NAME ...]

Prints one markdown table row per setting: test NLL, 2-way TVD, 3-way TVD, TSTR logistic
AUC (mean +- sd over the draws RUNS/NAME/s*/eval.json), the relative sd of the final NLL,
the live components (weight above 1%) and the effective number of components 1 / sum pi_k^2
of the released model (RUNS/NAME/s*/model.json, posterior-mean weights softmax(mu[:K])), and
the number of draws.
"""
import glob
import json
import math
import os
import statistics
import sys


def weights(model_path):
    model = json.load(open(model_path))
    z = model["mu"][: model["components"]]
    top = max(z)
    e = [math.exp(x - top) for x in z]
    return [x / sum(e) for x in e]


def row(path):
    evals = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(path, "s*", "eval.json")))]
    if not evals:
        return f"| {os.path.basename(path)} | no eval.json |"

    def stat(get, digits):
        v = [get(e) for e in evals]
        sd = statistics.stdev(v) if len(v) > 1 else float("nan")
        return f"{statistics.mean(v):.{digits}f} ± {sd:.{digits}f}", v

    nll, v = stat(lambda e: e["nll_test"], 3)
    rel = statistics.stdev(v) / statistics.mean(v) * 100 if len(v) > 1 else float("nan")
    cells = [nll, f"{rel:.2f}%"]
    for key, digits in [("tvd_2way", 4), ("tvd_3way", 4)]:
        cells.append(stat(lambda e: e[key], digits)[0])
    cells.append(stat(lambda e: e["tstr"]["auc_synth"], 4)[0])
    pis = [weights(f) for f in sorted(glob.glob(os.path.join(path, "s*", "model.json")))]
    cells.append(", ".join(str(sum(p > 0.01 for p in w)) for w in pis))
    cells.append(", ".join(f"{1 / sum(p * p for p in w):.1f}" for w in pis))
    return f"| {os.path.basename(path)} | " + " | ".join(cells) + f" | {len(evals)} |"


print("| setting | test NLL | sd/mean NLL | 2-way TVD | 3-way TVD | TSTR AUC (logistic) | live components | effective components | draws |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for p in sys.argv[1:]:
    print(row(p))
