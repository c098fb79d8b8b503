#!/usr/bin/env python3
"""Reference values for `calibra ood`, computed independently with scikit-learn.

Writes a small deterministic synthetic case to tests/fixtures/ood/: 200 in-distribution (ID)
and 150 out-of-distribution (OOD) rows of 10 float32 logits (`id-logits.npy`,
`ood-logits.npy`), and `expected.json`, the objects `calibra ood --json` must print at T = 1
and T = 2 (tests/cli.rs compares them within 1e-9).

Scores (higher = more ID): MSP = exp(max_k z_k/T - logsumexp(z/T)), max-logit = max_k z_k,
energy = T·logsumexp(z/T), with scipy.special.logsumexp. Metrics: AUROC from
sklearn.metrics.roc_auc_score and AUPR-In/Out from average_precision_score (ID positive on the
scores; OOD positive on the negated scores); FPR95 in NumPy: the share of OOD scores at or above
the ceil(0.95·n_id)-th largest ID score. Definitions: docs/definitions.md.

Ties are planted on purpose: some rows are rounded to multiples of 0.5 (max-logit ties across
the sets) and some rows are exact copies (ties of every score, within ID and across the sets).
Every other pair of rows must differ in every score by far more than rounding, so that the
float64 arithmetic here and in Rust orders the scores the same way; the script checks this.

Rerun from the repository root: pip install numpy scipy scikit-learn; python3 scripts/ood-reference.py
"""

import json
import pathlib

import numpy as np
import scipy
import sklearn
from scipy.special import logsumexp
from sklearn.metrics import average_precision_score, roc_auc_score

N_ID, N_OOD, NUM_CLASSES = 200, 150, 10
TEMPERATURES = (1.0, 2.0)
# Scores of rows that are not copies of each other must differ by more than this (relative).
MIN_RELATIVE_GAP = 1e-9
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ood"


def synthetic_logits():
    """ID rows have one class raised by about 3.5, OOD rows by about 1.5, on N(0, 1) noise."""
    rng = np.random.default_rng(0)

    def rows(n, boost, spread):
        logits = rng.normal(0.0, spread, size=(n, NUM_CLASSES))
        logits[np.arange(n), rng.integers(0, NUM_CLASSES, size=n)] += boost
        return logits

    in_distribution = rows(N_ID, 3.5, 1.0)
    out_of_distribution = rows(N_OOD, 1.5, 1.2)
    # Rounded rows: max-logits on a 0.5 grid, tied within and across the sets.
    in_distribution[:80] = np.round(in_distribution[:80] * 2.0) / 2.0
    out_of_distribution[:60] = np.round(out_of_distribution[:60] * 2.0) / 2.0
    # Copies: ID rows 0-9 again in OOD, ID rows 10-19 again in ID.
    out_of_distribution[60:70] = in_distribution[:10]
    in_distribution[190:200] = in_distribution[10:20]
    return in_distribution.astype(np.float32), out_of_distribution.astype(np.float32)


def scores(logits, temperature):
    """MSP, max-logit and energy of every row, computed once per distinct row so that copies
    get bit-identical scores."""
    distinct, row_of = np.unique(logits.astype(np.float64), axis=0, return_inverse=True)
    scaled = distinct / temperature
    log_partition = logsumexp(scaled, axis=1)
    per_distinct = {
        "msp": np.exp(scaled.max(axis=1) - log_partition),
        "max_logit": distinct.max(axis=1),
        "energy": temperature * log_partition,
    }
    for name, values in per_distinct.items():
        check_separated(name, temperature, values)
    return {name: values[row_of.ravel()] for name, values in per_distinct.items()}


def check_separated(name, temperature, per_distinct_row):
    """Distinct rows must not share an MSP or energy score, and no two different scores may lie
    closer than MIN_RELATIVE_GAP (max-logits on the 0.5 grid tie exactly, which is wanted)."""
    values = np.unique(per_distinct_row)
    if name != "max_logit" and len(values) != len(per_distinct_row):
        raise SystemExit(f"{name} at T = {temperature}: distinct rows share a score")
    gaps = np.diff(values) / np.maximum(1.0, np.abs(values[1:]))
    if gaps.min() <= MIN_RELATIVE_GAP:
        raise SystemExit(f"{name} at T = {temperature}: scores closer than {MIN_RELATIVE_GAP}")


def fpr_at_95_tpr(in_scores, out_scores):
    required = (95 * len(in_scores) + 99) // 100
    threshold = np.sort(in_scores)[::-1][required - 1]
    return float(np.mean(out_scores >= threshold))


def detection_metrics(in_scores, out_scores):
    is_in = np.concatenate([np.ones(len(in_scores)), np.zeros(len(out_scores))])
    both = np.concatenate([in_scores, out_scores])
    return {
        "fpr95": fpr_at_95_tpr(in_scores, out_scores),
        "auroc": float(roc_auc_score(is_in, both)),
        "aupr_in": float(average_precision_score(is_in, both)),
        "aupr_out": float(average_precision_score(1 - is_in, -both)),
    }


def main():
    in_distribution, out_of_distribution = synthetic_logits()
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "id-logits.npy", in_distribution)
    np.save(OUT / "ood-logits.npy", out_of_distribution)
    # Scored together, so that an ID row copied into the OOD set gets the very same scores.
    both = np.concatenate([in_distribution, out_of_distribution])
    cases = []
    for temperature in TEMPERATURES:
        by_name = scores(both, temperature)
        case = {"temperature": temperature, "n_id": N_ID, "n_ood": N_OOD}
        for name, values in by_name.items():
            case[name] = detection_metrics(values[:N_ID], values[N_ID:])
        cases.append(case)
    expected = {
        "generated_by": "scripts/ood-reference.py",
        "versions": {
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__,
        },
        "cases": cases,
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(json.dumps(cases, indent=2))


if __name__ == "__main__":
    main()
