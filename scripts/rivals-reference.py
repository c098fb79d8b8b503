#!/usr/bin/env python3
"""Reference values for `recalibration` (temperature scaling's rivals), computed independently
with scipy and scikit-learn.

For one synthetic case (numpy's default_rng(7): 4 classes, 400 calibration and 300 evaluation
rows, logits rounded to float32, labels drawn from softmax(w* z + b*) with planted per-class
scales w* = (0.5, 0.8, 1.2, 2.0) and biases b* = (0.3, -0.2, 0.1, -0.2)) this script fits, on
the calibration rows:

* vector scaling (Guo et al., ICML 2017, §4.2): softmax(w z + b) minimising the mean NLL, with
  scipy.optimize.minimize (BFGS, analytic gradient), biases shifted to mean 0 (adding a constant
  to every bias changes nothing);
* temperature scaling: scipy.optimize.minimize_scalar (bounded) on the mean NLL;
* isotonic regression of the top-label confidence on the correctness: scikit-learn's
  IsotonicRegression (pool-adjacent-violators, ties in x averaged first), used as the step
  function that PAV fits: a confidence takes the value of the last block starting at or below
  it (scikit-learn's predict interpolates linearly between blocks instead);
* histogram binning (Zadrozny & Elkan, ICML 2001): 15 equal-mass bins cut at midpoints between
  sorted confidences, a confidence equal to a cut in the upper bin, each bin's fraction right;

and writes tests/fixtures/rivals/expected.json with the inputs, the fitted parameters,
scikit-learn's fitted isotonic values at the calibration rows, and each method's metrics on the
evaluation rows under calibra's conventions (docs/definitions.md): accuracy, NLL (label
probability clipped below at 2^-52), Brier, top-label ECE with 15 equal-width bins, and the
number of distinct confidences. A top-label method's probability vector gives the predicted
class the recalibrated confidence c' and the other classes (1 - c') in proportion to their
softmax probabilities. src/recalibration_tests.rs compares calibra with these values.

Rerun from the repository root:
    python3 -m venv /tmp/relplot-venv
    /tmp/relplot-venv/bin/pip install numpy scipy scikit-learn==1.9.1
    /tmp/relplot-venv/bin/python scripts/rivals-reference.py
"""

import importlib.metadata
import json
import pathlib

import numpy as np
import scipy
import sklearn
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_softmax
from sklearn.isotonic import IsotonicRegression

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "rivals"
NUM_CLASSES = 4
PLANTED_SCALES = np.array([0.5, 0.8, 1.2, 2.0])
PLANTED_BIASES = np.array([0.3, -0.2, 0.1, -0.2])
HISTOGRAM_BINS = 15
ECE_BINS = 15
MIN_PROBABILITY = np.finfo(np.float64).eps


def synthetic_case():
    """Float32 logits [n, K] and labels of the calibration and evaluation parts."""
    rng = np.random.default_rng(7)
    n = 700
    centres = rng.normal(size=(NUM_CLASSES, NUM_CLASSES)) * 2.5
    origin = rng.integers(NUM_CLASSES, size=n)
    logits = (centres[origin] + rng.normal(size=(n, NUM_CLASSES)) * 1.5).astype(np.float32)
    planted = np.exp(log_softmax(PLANTED_SCALES * logits.astype(np.float64) + PLANTED_BIASES, axis=1))
    labels = np.array([rng.choice(NUM_CLASSES, p=row / row.sum()) for row in planted])
    return (logits[:400], labels[:400]), (logits[400:], labels[400:])


def vector_nll(theta, z, y):
    w, b = theta[:NUM_CLASSES], theta[NUM_CLASSES:]
    log_p = log_softmax(w * z + b, axis=1)
    return -log_p[np.arange(len(y)), y].mean()


def vector_gradient(theta, z, y):
    w, b = theta[:NUM_CLASSES], theta[NUM_CLASSES:]
    p = np.exp(log_softmax(w * z + b, axis=1))
    p[np.arange(len(y)), y] -= 1.0
    return np.concatenate([(p * z).mean(axis=0), p.mean(axis=0)])


def fit_vector(z, y):
    start = np.concatenate([np.ones(NUM_CLASSES), np.zeros(NUM_CLASSES)])
    result = minimize(vector_nll, start, args=(z, y), jac=vector_gradient, method="BFGS",
                      options={"gtol": 1e-12, "maxiter": 10_000})
    w, b = result.x[:NUM_CLASSES], result.x[NUM_CLASSES:]
    return w, b - b.mean()


def fit_temperature(z, y):
    nll = lambda t: -log_softmax(z / t, axis=1)[np.arange(len(y)), y].mean()
    return minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded", options={"xatol": 1e-10}).x


def top_label(z, y):
    """Softmax log-probabilities at T = 1, predicted class (ties to the lowest index),
    confidence and correctness."""
    log_p = log_softmax(z, axis=1)
    predicted = np.argmax(z, axis=1)
    confidence = np.exp(log_p[np.arange(len(y)), predicted])
    return log_p, predicted, confidence, predicted == y


def isotonic_step(confidence, correct):
    """scikit-learn's isotonic fit as a step function: (block starts, block values)."""
    model = IsotonicRegression(increasing=True).fit(confidence, correct.astype(np.float64))
    xs = np.unique(confidence)
    values = model.predict(xs)
    first = np.concatenate([[True], values[1:] != values[:-1]])
    return model.predict(confidence), xs[first], values[first]


def histogram_step(confidence, correct):
    s = np.sort(confidence)
    n = len(s)
    bins = min(HISTOGRAM_BINS, n)
    cuts = []
    for b in range(1, bins):
        i = b * n // bins
        cut = 0.5 * (s[i - 1] + s[i])
        if not cuts or cuts[-1] != cut:
            cuts.append(cut)
    starts = np.array([-np.inf] + cuts)
    bin_of = np.searchsorted(starts, confidence, side="right") - 1
    kept_starts, values = [], []
    for b in range(len(starts)):
        members = bin_of == b
        if members.any():
            kept_starts.append(-np.inf if not kept_starts else starts[b])
            values.append(correct[members].mean())
    return np.array(kept_starts), np.array(values)


def step_at(starts, values, confidence):
    return values[np.maximum(np.searchsorted(starts, confidence, side="right") - 1, 0)]


def ece(confidence, correct):
    index = np.minimum(np.floor(confidence * ECE_BINS).astype(int), ECE_BINS - 1)
    total = 0.0
    for b in range(ECE_BINS):
        members = index == b
        if members.any():
            total += members.sum() / len(confidence) * abs(correct[members].mean() - confidence[members].mean())
    return total


def metrics_full(log_p, y):
    """Metrics of a full softmax vector (temperature and vector scaling)."""
    rows = np.arange(len(y))
    predicted = np.argmax(log_p, axis=1)
    p = np.exp(log_p)
    onehot = np.eye(NUM_CLASSES)[y]
    confidence = p[rows, predicted]
    correct = predicted == y
    return {
        "accuracy": correct.mean(),
        "nll": -np.maximum(log_p[rows, y], np.log(MIN_PROBABILITY)).mean(),
        "brier": ((p - onehot) ** 2).sum(axis=1).mean(),
        "ece": ece(confidence, correct),
        "distinct_confidences": len(np.unique(confidence)),
    }


def metrics_top_label(z, y, starts, values):
    """Metrics of a recalibrated top-label confidence, the rest shared in proportion."""
    rows = np.arange(len(y))
    log_p, predicted, confidence, correct = top_label(z, y)
    recalibrated = step_at(starts, values, confidence)
    p = np.exp(log_p)
    rest = 1.0 - p[rows, predicted]
    vector = (1.0 - recalibrated)[:, None] * p / rest[:, None]
    vector[rows, predicted] = recalibrated
    with np.errstate(divide="ignore"):
        label_log_p = np.log(vector[rows, y])
    onehot = np.eye(NUM_CLASSES)[y]
    return {
        "accuracy": correct.mean(),
        "nll": -np.maximum(label_log_p, np.log(MIN_PROBABILITY)).mean(),
        "brier": ((vector - onehot) ** 2).sum(axis=1).mean(),
        "ece": ece(recalibrated, correct),
        "distinct_confidences": len(np.unique(recalibrated)),
    }


def main():
    (z_cal32, y_cal), (z_eval32, y_eval) = synthetic_case()
    z_cal, z_eval = z_cal32.astype(np.float64), z_eval32.astype(np.float64)
    scales, biases = fit_vector(z_cal, y_cal)
    temperature = fit_temperature(z_cal, y_cal)
    _, _, confidence, correct = top_label(z_cal, y_cal)
    isotonic_fitted, iso_starts, iso_values = isotonic_step(confidence, correct)
    hist_starts, hist_values = histogram_step(confidence, correct)
    fixture = {
        "generator": "scripts/rivals-reference.py",
        "versions": {
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__,
        },
        "num_classes": NUM_CLASSES,
        "planted_scales": PLANTED_SCALES.tolist(),
        "planted_biases": PLANTED_BIASES.tolist(),
        "calibration_logits": [float(v) for v in z_cal32.ravel()],
        "calibration_labels": y_cal.tolist(),
        "evaluation_logits": [float(v) for v in z_eval32.ravel()],
        "evaluation_labels": y_eval.tolist(),
        "vector": {
            "scales": scales.tolist(),
            "biases": biases.tolist(),
            "nll": vector_nll(np.concatenate([scales, biases]), z_cal, y_cal),
            "evaluation": metrics_full(log_softmax(scales * z_eval + biases, axis=1), y_eval),
        },
        "temperature": {
            "temperature": temperature,
            "evaluation": metrics_full(log_softmax(z_eval / temperature, axis=1), y_eval),
        },
        "isotonic": {
            "fitted_at_calibration": isotonic_fitted.tolist(),
            "starts": iso_starts.tolist(),
            "values": iso_values.tolist(),
            "evaluation": metrics_top_label(z_eval, y_eval, iso_starts, iso_values),
        },
        "histogram": {
            "values": hist_values.tolist(),
            "evaluation": metrics_top_label(z_eval, y_eval, hist_starts, hist_values),
        },
    }
    OUT.mkdir(parents=True, exist_ok=True)
    text = json.dumps(fixture, indent=1, default=lambda v: v.item())
    (OUT / "expected.json").write_text(text + "\n")
    print(f"wrote {OUT / 'expected.json'}: vector scales {scales.round(3)}, T = {temperature:.4f}")


if __name__ == "__main__":
    main()
