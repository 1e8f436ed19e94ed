#!/usr/bin/env python3
"""Reference values for tests/data_vectors.rs, computed with mpmath at 50 digits.

Run from this directory: python3 gen_data_vectors.py (writes the two JSON files)."""
import json
import mpmath as mp

mp.mp.dps = 50


def ln_beta_pdf(a, b, u):
    a, b, u = mp.mpf(a), mp.mpf(b), mp.mpf(u)
    return (a - 1) * mp.log(u) + (b - 1) * mp.log(1 - u) - (mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b))


shapes = [0.01, 0.1, 0.5, 1.0, 1.5, 2.0, 7.25, 30.0, 250.0, 1e4]
units = [1e-6, 0.001, 0.25, 0.5, 0.9, 0.999999]
beta = []
for a in shapes:
    for b in shapes:
        for u in units:
            beta.append({"a": a, "b": b, "u": u, "ln_pdf": float(ln_beta_pdf(a, b, u))})
with open("beta_ln_pdf.json", "w") as f:
    json.dump({"about": "ln Beta(u; a, b), mpmath 50 digits (gen_data_vectors.py)", "cases": beta}, f, indent=1)

# A 3-component mixture over one Beta column and one 4-way categorical column.
weights = [0.5, 0.3, 0.2]
a = [2.0, 0.7, 40.0]
b = [5.0, 0.7, 3.0]
probs = [[0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.01, 0.01, 0.08, 0.9]]
records = [[0.1, 0], [0.5, 3], [0.97, 3], [1e-6, 1], [0.999999, 2], [0.3, 0]]
out = []
for u, c in records:
    terms = [mp.log(weights[k]) + ln_beta_pdf(a[k], b[k], u) + mp.log(probs[k][c]) for k in range(3)]
    out.append({"u": u, "c": c, "ll": float(mp.log(sum(mp.exp(t) for t in terms)))})
with open("mixture_ll.json", "w") as f:
    json.dump({"about": "ln p(x) of a 3-component Beta x Categorical mixture, mpmath 50 digits (gen_data_vectors.py)",
               "weights": weights, "a": a, "b": b, "probs": probs, "records": out}, f, indent=1)
