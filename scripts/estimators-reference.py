#!/usr/bin/env python3
"""Reference values for `calibration_estimators` (and the binned ECE, RMSCE and MCE beside
them, and of `venn_abers`), computed with the libraries people use: MAPIE 1.6,
uncertainty-calibration, netcal, torchmetrics and venn-abers.

One synthetic case (numpy's default_rng(42)): 10 classes, 600 rows of float32 logits
`2·(N(0, 1) + 2·[class = origin])`, labels drawn from softmax(z / 2) (a planted temperature of
2, so the logits are overconfident at T = 1), and 8 more rows whose top logit is 60 above the
others, labelled with the top class: at T = 1 their confidence is exactly 1.0 in float64, the
edge case where libraries bin differently. At T = 1 and T = 1.7 (softmax computed in float64
from the float32 logits, as calibra does: exp(z/T - max) / sum), the script records:

* MAPIE 1.6 (`mapie.metrics.calibration`): `spiegelhalter_statistic` and `_p_value`,
  `kuiper_statistic` and `_p_value`, `kolmogorov_smirnov_statistic` and `_p_value`, each as
  shipped (the confidences jittered by a relative 1e-8, seed 1, before sorting) and with
  `add_jitter` replaced by the identity (the script checks that rows of tied confidence are all
  right or all wrong, so their order changes nothing);
  `cumulative_differences` without jitter, and from it Gupta et al.'s KS error max |D|;
  `top_label_ece` with `num_bins = B + 1` (MAPIE's uniform bins are `{0}` and the B intervals
  `((b-1)/B, b/B]`, the same bins as calibra's B bins for confidences off the inner edges), and
  `expected_calibration_error` of each predicted class's rows with their count;
* uncertainty-calibration 0.1.4: `lower_bound_scaling_ce(p=2, debias=True, mode='top-label')`
  with `get_equal_prob_bins` (B equal-width bins, calibra's), and the library's default
  `get_calibration_error(p=2, debias=True, mode='top-label')` (its own equal-mass bins);
* torchmetrics: `multiclass_calibration_error` with norm l1, l2 and max (ECE, RMSCE, MCE; a
  confidence of exactly 1 in a bin of its own, and f32 arithmetic) on
  float64 probabilities, and its private `_ce_compute(norm='l2', debias=True)`;
* venn-abers 1.5.4: `VennAbers().fit` on the top-label confidences and correctness of the
  first 304 rows at T = 1.7 and `predict_proba` of the other 304 rows' confidences (none equal
  to a calibration one): p0, p1 and the merged probability p1 / (1 - p0 + p1);
* netcal 1.4: `ECE(bins=B).measure` and `MCE(bins=B).measure` on the probabilities (bins as
  calibra's, a confidence of 1 in the last);

all with B = 15, and writes tests/fixtures/estimators/expected.json. The native tests
(src/calibration_estimators_tests.rs, tests/cli.rs) compare calibra with these values;
docs/definitions.md says where each library's definition differs.

Rerun from the repository root:
    python3 -m venv /tmp/venv-estimators
    /tmp/venv-estimators/bin/pip install numpy==2.4.6 mapie==1.6.0 uncertainty-calibration==0.1.4 \
        netcal==1.4.0 torchmetrics==1.9.0 torch==2.15.0 venn-abers==1.5.4
    /tmp/venv-estimators/bin/python scripts/estimators-reference.py
"""

import importlib.metadata
import json
import pathlib

import calibration as uncertainty_calibration
import mapie.metrics.calibration as mapie_calibration
import numpy as np
import torch
from netcal.metrics import ECE, MCE
from venn_abers import VennAbers
from torchmetrics.functional.classification import multiclass_calibration_error
from torchmetrics.functional.classification.calibration_error import _ce_compute

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "estimators"
NUM_CLASSES = 10
ROWS = 600
CERTAIN_ROWS = 8
PLANTED_TEMPERATURE = 2.0
BINS = 15
TEMPERATURES = [1.0, 1.7]


def synthetic_case():
    """Float32 logits [n, K] and labels."""
    rng = np.random.default_rng(42)
    origin = rng.integers(NUM_CLASSES, size=ROWS)
    logits = 2.0 * (rng.normal(size=(ROWS, NUM_CLASSES)) + 2.0 * np.eye(NUM_CLASSES)[origin])
    logits = logits.astype(np.float32)
    planted = softmax(logits, PLANTED_TEMPERATURE)
    labels = np.array([rng.choice(NUM_CLASSES, p=row / row.sum()) for row in planted])
    certain_class = rng.integers(NUM_CLASSES, size=CERTAIN_ROWS)
    certain = (rng.normal(size=(CERTAIN_ROWS, NUM_CLASSES))
               + 60.0 * np.eye(NUM_CLASSES)[certain_class]).astype(np.float32)
    return np.concatenate([logits, certain]), np.concatenate([labels, certain_class])


def softmax(logits32, temperature):
    """calibra's softmax: float64 z/T minus the row's max, exponentiated and normalised."""
    scaled = logits32.astype(np.float64) / temperature
    weights = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def without_jitter(function, *args):
    """A MAPIE function run with `add_jitter` replaced by the identity."""
    shipped = mapie_calibration.add_jitter
    mapie_calibration.add_jitter = lambda x, **_: x
    try:
        return function(*args)
    finally:
        mapie_calibration.add_jitter = shipped


def at_temperature(logits32, labels, temperature):
    probabilities = softmax(logits32, temperature)
    predicted = np.argmax(logits32, axis=1)
    rows = np.arange(len(labels))
    confidence = probabilities[rows, predicted]
    correct = (predicted == labels).astype(int)
    for value in np.unique(confidence):
        tied = correct[confidence == value]
        assert (tied == tied[0]).all(), "tied confidences must share their outcome"
    assert correct[confidence == 1.0].all(), "rows at confidence 1 must be right"

    tests = {}
    for name in ["spiegelhalter", "kuiper", "kolmogorov_smirnov"]:
        statistic = getattr(mapie_calibration, f"{name}_statistic")
        p_value = getattr(mapie_calibration, f"{name}_p_value")
        tests[name] = {
            "statistic": without_jitter(statistic, correct, confidence),
            "p_value": without_jitter(p_value, correct, confidence),
            "statistic_jittered": statistic(correct, confidence),
            "p_value_jittered": p_value(correct, confidence),
        }
    curve = without_jitter(mapie_calibration.cumulative_differences, correct, confidence)
    per_class = []
    for label in range(NUM_CLASSES):
        members = predicted == label
        per_class.append({
            "count": int(members.sum()),
            "ece": mapie_calibration.expected_calibration_error(
                (labels[members] == label).astype(int), confidence[members], num_bins=BINS + 1)
            if members.any() else 0.0,
        })
    probabilities_tensor = torch.tensor(probabilities, dtype=torch.float64)
    labels_tensor = torch.tensor(labels)
    torchmetrics = {
        norm: multiclass_calibration_error(probabilities_tensor, labels_tensor,
                                           num_classes=NUM_CLASSES, n_bins=BINS, norm=norm).item()
        for norm in ["l1", "l2", "max"]
    }
    torchmetrics["l2_debiased"] = _ce_compute(
        torch.tensor(confidence, dtype=torch.float64), torch.tensor(correct, dtype=torch.float64),
        BINS, norm="l2", debias=True).item()
    return {
        "temperature": temperature,
        "mapie": {
            **tests,
            "cumulative_differences": curve.tolist(),
            "ks_error": float(np.max(np.abs(curve))),
            "top_label_ece": mapie_calibration.top_label_ece(labels, probabilities, num_bins=BINS + 1),
            "top_label_per_class": per_class,
        },
        "uncertainty_calibration": {
            "debiased_l2_equal_width": uncertainty_calibration.lower_bound_scaling_ce(
                probabilities, labels, p=2, debias=True, num_bins=BINS,
                binning_scheme=uncertainty_calibration.get_equal_prob_bins, mode="top-label"),
            "debiased_l2_default": uncertainty_calibration.get_calibration_error(
                probabilities, labels, p=2, debias=True, mode="top-label"),
        },
        "torchmetrics": torchmetrics,
        "netcal": {
            "ece": float(ECE(bins=BINS).measure(probabilities, labels)),
            "mce": float(MCE(bins=BINS).measure(probabilities, labels)),
        },
        "certain_rows": int((confidence == 1.0).sum()),
    }


def venn_abers(logits32, labels, temperature):
    """venn-abers' inductive predictor of the top-label confidence: fitted on the first half
    of the rows, applied to the second."""
    probabilities = softmax(logits32, temperature)
    predicted = np.argmax(logits32, axis=1)
    confidence = probabilities[np.arange(len(labels)), predicted]
    correct = (predicted == labels).astype(int)
    half = len(labels) // 2
    assert not np.isin(confidence[half:], confidence[:half]).any(), "no test confidence tied"
    two_columns = lambda c: np.column_stack([1.0 - c, c])
    model = VennAbers().fit(two_columns(confidence[:half]), correct[:half])
    merged, p0_p1 = model.predict_proba(two_columns(confidence[half:]))
    return {
        "temperature": temperature,
        "calibration_rows": half,
        "p0": p0_p1[:, 0].tolist(),
        "p1": p0_p1[:, 1].tolist(),
        "merged": merged[:, 1].tolist(),
    }


def main():
    logits32, labels = synthetic_case()
    fixture = {
        "generator": "scripts/estimators-reference.py",
        "versions": {name: importlib.metadata.version(name) for name in
                     ["numpy", "mapie", "uncertainty-calibration", "netcal", "torchmetrics", "torch",
                      "venn-abers"]},
        "num_classes": NUM_CLASSES,
        "bins": BINS,
        "logits": [float(v) for v in logits32.ravel()],
        "labels": labels.tolist(),
        "temperatures": [at_temperature(logits32, labels, t) for t in TEMPERATURES],
        "venn_abers": venn_abers(logits32, labels, TEMPERATURES[1]),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    text = json.dumps(fixture, indent=1, default=lambda v: v.item())
    (OUT / "expected.json").write_text(text + "\n")
    for case in fixture["temperatures"]:
        print(json.dumps({k: v for k, v in case["mapie"].items()
                          if k not in ("cumulative_differences", "top_label_per_class")}, default=float))
        print(case["uncertainty_calibration"], case["torchmetrics"], case["netcal"], case["certain_rows"])


if __name__ == "__main__":
    main()
