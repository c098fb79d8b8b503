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
* `ood-pvalues.json`: conformal p-values of OOD scores (higher = more in-distribution) against
  300 held-out in-distribution scores, from crepes' `p_values_batch` (non-smoothed, with the
  nonconformity -score), for a batch of 200 in-distribution and 60 shifted scores, some rounded
  to a 0.25 grid so that scores tie within and across the sets; and which of them statsmodels'
  Benjamini-Hochberg (`multipletests(..., method="fdr_bh")`) rejects at q = 0.05, 0.1, 0.2.
  src/ood_pvalues_tests.rs compares the p-values within 1e-12 and the rejections exactly.
* `worst-slab.json`: worst-slab coverage (Cauchois et al. 2021) of 400 coverage flags over
  slabs of 4-dimensional float32 features along 50 given unit directions, at delta = 0.1 and
  0.25, by the search of Romano, Sesia & Candes's `wsc` (arc/coverage.py,
  github.com/msesia/arc, not on PyPI: its `wsc_v` is copied below, taking the coverage flags
  instead of labels and sets, and otherwise as it is). The flags are
  drawn with coverage 0.9, lowered to 0.6 where x_0 > 1. src/conformal/worst_slab_tests.rs
  compares the coverage along each direction and the smallest within 1e-12.
* `clustered.json`: clustered conformal prediction (Ding et al. 2023) on planted scores: 12
  classes in three groups whose scores follow U^0.5, U and U^3 (60 clustering and 100 proper
  calibration rows each) and a 13th, rare class (5 rows of each). As in the authors' code
  (github.com/tiffanyding/class-conditional-conformal, utils/conformal_utils.py, not on PyPI):
  the embeddings are np.quantile at 0.5, ..., 0.9, the clusters scikit-learn's
  KMeans(n_clusters=3, n_init=10, random_state=0) weighted by the square root of each class's
  rows (classes with fewer than ceil((1 - alpha)/alpha) rows left out, in the null cluster),
  and each threshold the authors' compute_qhat, np.quantile(v, ceil((n + 1)(1 - alpha))/n,
  method="inverted_cdf"), over the cluster's proper rows (over all of them for the null cluster).
  src/conformal/clustered_tests.rs compares the embeddings within 1e-12, the clusters exactly
  (numbered by their first class) and the thresholds exactly.

Rerun from the repository root:
  python3 -m venv /tmp/venv-conformal
  /tmp/venv-conformal/bin/pip install numpy==2.4.6 scipy==1.17.1 pandas==3.1.1 crepes==0.9.1 \
      statsmodels==0.15.0 scikit-learn==1.9.1
  /tmp/venv-conformal/bin/python scripts/conformal-reference.py
"""

import importlib.metadata
import json
import math
import pathlib
from fractions import Fraction

import numpy as np
import scipy
import statsmodels
from crepes.base import p_values_batch
from scipy.stats import beta
from sklearn.cluster import KMeans
from statsmodels.stats.multitest import multipletests

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


FDR_LEVELS = (0.05, 0.1, 0.2)


def ood_pvalues():
    rng = np.random.default_rng(43)
    calibration = rng.normal(0.0, 1.0, 300)
    in_distribution = rng.normal(0.0, 1.0, 200)
    out_of_distribution = rng.normal(-2.5, 1.0, 60)
    # Ties: a quarter of each set on a 0.25 grid.
    for scores in (calibration, in_distribution, out_of_distribution):
        scores[: len(scores) // 4] = np.round(scores[: len(scores) // 4] * 4.0) / 4.0
    tested = np.concatenate([in_distribution, out_of_distribution])
    pvalues = p_values_batch(-calibration, -tested, smoothing=False)
    bh = []
    for level in FDR_LEVELS:
        rejected, _, _, _ = multipletests(pvalues, alpha=level, method="fdr_bh")
        bh.append({"level": level, "rejected": [bool(r) for r in rejected]})
    return {
        "crepes": importlib.metadata.version("crepes"),
        "statsmodels": statsmodels.__version__,
        "calibration": calibration.tolist(),
        "tested": tested.tolist(),
        "n_in_distribution": len(in_distribution),
        "pvalues": pvalues.tolist(),
        "benjamini_hochberg": bh,
    }


def wsc_v(X, y, S, delta, v):
    """arc/coverage.py's wsc_v (Romano, Sesia & Candes), with `cover` given instead of y, S."""
    n = len(y)
    cover = np.array(S)
    z = np.dot(X, v)
    z_order = np.argsort(z)
    z_sorted = z[z_order]
    cover_ordered = cover[z_order]
    ai_max = int(np.round((1.0 - delta) * n))
    ai_best = 0
    bi_best = n - 1
    cover_min = 1
    for ai in np.arange(0, ai_max):
        bi_min = np.minimum(ai + int(np.round(delta * n)), n)
        coverage = np.cumsum(cover_ordered[ai:n]) / np.arange(1, n - ai + 1)
        coverage[np.arange(0, bi_min - ai)] = 1
        bi_star = ai + np.argmin(coverage)
        cover_star = coverage[bi_star - ai]
        if cover_star < cover_min:
            ai_best = ai
            bi_best = bi_star
            cover_min = cover_star
    return cover_min, z_sorted[ai_best], z_sorted[bi_best]


def worst_slab():
    rng = np.random.default_rng(2021)
    n, dimension, directions = 400, 4, 50
    features = rng.normal(size=(n, dimension)).astype(np.float32)
    level = np.where(features[:, 0] > 1.0, 0.6, 0.9)
    covered = rng.random(n) < level
    v = rng.normal(size=(directions, dimension))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    cases = []
    for delta in (0.1, 0.25):
        values = [float(wsc_v(features.astype(np.float64), covered, covered, delta, v[m])[0])
                  for m in range(directions)]
        cases.append(
            {"delta": delta, "coverage": float(min(values)), "per_direction": values}
        )
    return {
        "features": features.astype(np.float64).ravel().tolist(),
        "dimension": dimension,
        "covered": [bool(c) for c in covered],
        "directions": v.ravel().tolist(),
        "cases": cases,
    }


def authors_qhat(values, alpha):
    n = len(values)
    if n == 0:
        return None
    level = math.ceil((n + 1) * (1 - alpha)) / n
    if level > 1:
        return None
    return float(np.quantile(values, level, method="inverted_cdf"))


def clustered():
    rng = np.random.default_rng(2023)
    alpha = 0.1
    powers = (0.5, 1.0, 3.0)

    def part(rows):
        labels = np.concatenate([np.full(rows, y) for y in range(12)] + [np.full(5, 12)])
        group = np.where(labels < 12, labels % 3, 1)
        scores = rng.random(len(labels)) ** np.array(powers)[group]
        order = rng.permutation(len(labels))
        return scores[order], labels[order]

    clustering_scores, clustering_labels = part(60)
    proper_scores, proper_labels = part(100)
    needed = math.ceil((1 - alpha) / alpha)
    embeddings, kept, counts = [], [], []
    for y in range(13):
        class_scores = clustering_scores[clustering_labels == y]
        embeddings.append(np.quantile(class_scores, [0.5, 0.6, 0.7, 0.8, 0.9]).tolist())
        if len(class_scores) >= needed:
            kept.append(y)
            counts.append(len(class_scores))
    kmeans = KMeans(n_clusters=3, random_state=0, n_init=10).fit(
        np.array([embeddings[y] for y in kept]), sample_weight=np.sqrt(counts)
    )
    renumbered, cluster_of_class = {}, [None] * 13
    for y, group in zip(kept, kmeans.labels_):
        cluster_of_class[y] = renumbered.setdefault(int(group), len(renumbered))
    qhat_per_class = []
    for y in range(13):
        if cluster_of_class[y] is None:
            values = proper_scores
        else:
            members = [c for c in range(13) if cluster_of_class[c] == cluster_of_class[y]]
            values = proper_scores[np.isin(proper_labels, members)]
        qhat_per_class.append(authors_qhat(values, alpha))
    return {
        "alpha": alpha,
        "clustering_scores": clustering_scores.tolist(),
        "clustering_labels": clustering_labels.tolist(),
        "proper_scores": proper_scores.tolist(),
        "proper_labels": proper_labels.tolist(),
        "embeddings": embeddings,
        "cluster_of_class": cluster_of_class,
        "qhat_per_class": qhat_per_class,
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    pac = {"scipy": scipy.__version__, "cases": pac_cases()}
    (OUT / "pac-ranks.json").write_text(json.dumps(pac, indent=1) + "\n")
    (OUT / "ood-pvalues.json").write_text(json.dumps(ood_pvalues()) + "\n")
    (OUT / "worst-slab.json").write_text(json.dumps(worst_slab()) + "\n")
    (OUT / "clustered.json").write_text(json.dumps(clustered()) + "\n")


if __name__ == "__main__":
    main()
