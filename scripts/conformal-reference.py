#!/usr/bin/env python3
"""Reference values for the conformal methods beyond one split (docs/definitions.md).

Writes into tests/fixtures/conformal/:

* `pac-ranks.json`: the rank k of the training-conditional (PAC) threshold (Vovk 2012) for a
  grid of calibration sizes n and levels (epsilon, delta): the smallest k <= n with
  P(Binomial(n, 1 - epsilon) >= k) <= delta, which equals the Beta(k, n + 1 - k) law's mass
  below 1 - epsilon. No conformal library (MAPIE, TorchCP, crepes) offers this threshold, so
  the tail is summed here in exact rational arithmetic (fractions.Fraction, epsilon and delta
  read as the decimals they are written as), and scipy.stats.beta.cdf is checked to agree; the
  smallest n for which any k works, the smallest n with (1 - epsilon)^n <= delta, is written too.
  src/conformal/pac_tests.rs compares the ranks exactly.

Rerun from the repository root:
  python3 -m venv /tmp/venv-conformal
  /tmp/venv-conformal/bin/pip install numpy==2.4.6 scipy==1.17.1
  /tmp/venv-conformal/bin/python scripts/conformal-reference.py
"""

import json
import math
import pathlib
from fractions import Fraction

import scipy
from scipy.stats import beta

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "conformal"

PAC_SIZES = (10, 29, 30, 100, 250, 500, 999, 1000, 2000)
PAC_LEVELS = ("0.1,0.1", "0.1,0.05", "0.05,0.1", "0.2,0.01", "0.01,0.2", "0.1,0.5", "0.3,0.001")


def binomial_upper_tail(n, p, k):
    """P(Binomial(n, p) >= k), exactly."""
    q = 1 - p
    return sum(math.comb(n, j) * p**j * q ** (n - j) for j in range(k, n + 1))


def pac_rank(n, epsilon, delta):
    """The smallest k <= n with P(Binomial(n, 1 - epsilon) >= k) <= delta, or None."""
    p = 1 - epsilon
    # The tail decreases in k: walk down from k = n while the bound holds.
    if binomial_upper_tail(n, p, n) > delta:
        return None
    k = n
    tail = p**n
    while k > 1:
        tail_below = tail + math.comb(n, k - 1) * p ** (k - 1) * (1 - p) ** (n - k + 1)
        if tail_below > delta:
            break
        k, tail = k - 1, tail_below
    return k


def minimum_rows(epsilon, delta):
    n = 1
    while (1 - epsilon) ** n > delta:
        n += 1
    return n


def pac_cases():
    cases = []
    for levels in PAC_LEVELS:
        epsilon_text, delta_text = levels.split(",")
        epsilon, delta = Fraction(epsilon_text), Fraction(delta_text)
        needed = minimum_rows(epsilon, delta)
        for n in PAC_SIZES:
            k = pac_rank(n, epsilon, delta)
            if k is not None:
                # scipy's incomplete Beta puts k on the same side of delta, and k - 1 on the other.
                assert beta.cdf(float(1 - epsilon), k, n + 1 - k) <= float(delta) * (1 + 1e-9)
                if k > 1:
                    assert beta.cdf(float(1 - epsilon), k - 1, n + 2 - k) > float(delta)
            cases.append(
                {
                    "n": n,
                    "epsilon": float(epsilon),
                    "delta": float(delta),
                    "k": k,
                    "minimum_rows": needed,
                }
            )
    return cases


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    pac = {"scipy": scipy.__version__, "cases": pac_cases()}
    (OUT / "pac-ranks.json").write_text(json.dumps(pac, indent=1) + "\n")


if __name__ == "__main__":
    main()
