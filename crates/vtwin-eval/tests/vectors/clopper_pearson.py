"""Generates clopper_pearson.json: exact Clopper-Pearson intervals with mpmath (50 digits).

lower = Beta quantile (alpha/2; k, n-k+1), upper = Beta quantile (1-alpha/2; k+1, n-k),
found by bisection on the regularised incomplete beta function.
Run: python3 clopper_pearson.py > clopper_pearson.json
"""
import json
import mpmath as mp

mp.mp.dps = 50


def quantile(a, b, p):
    lo, hi = mp.mpf(0), mp.mpf(1)
    for _ in range(300):
        mid = (lo + hi) / 2
        if mp.betainc(a, b, 0, mid, regularized=True) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


cases = [(0, 10, 0.95), (10, 10, 0.95), (5, 10, 0.95), (1, 20, 0.95), (682, 925, 0.95),
         (3, 1000, 0.975), (0, 1000, 0.975), (1000, 1000, 0.975), (17, 40, 0.9), (999, 1000, 0.99)]
out = []
for k, n, conf in cases:
    alpha = mp.mpf(1) - mp.mpf(conf)
    lo = mp.mpf(0) if k == 0 else quantile(k, n - k + 1, alpha / 2)
    hi = mp.mpf(1) if k == n else quantile(k + 1, n - k, 1 - alpha / 2)
    out.append({"successes": k, "trials": n, "confidence": conf,
                "lower": float(lo), "upper": float(hi)})
print(json.dumps({"source": "mpmath 50 digits, tests/vectors/clopper_pearson.py; (682, 925) is R's ?binom.test example: 0.7076683 0.7654066",
                  "cases": out}, indent=1))
