#!/usr/bin/env python3
"""Reference values for `recalibration::dirichlet` (Dirichlet calibration with ODIR), computed
with the dirichletcal library of Kull et al. (NeurIPS 2019).

For one synthetic case (numpy's default_rng(11): 4 classes, 400 calibration and 300 evaluation
rows, logits rounded to float32, labels drawn from a planted Dirichlet map softmax(W* ln q + b*)
of the network's probabilities q = softmax(z)) this script fits, on the calibration rows,
dirichletcal's FullDirichletCalibrator with ODIR lambda = mu = 0.01 (`reg_norm=True`: the paper's
lambda/(K(K-1)) and mu/K; `ref_row=False`: every row of (W | b) free, as calibra fits it) with
the library's own Newton method. That method stops once its loss changes by less than 1e-12
over five steps, here at a gradient whose absolute values sum to 2.5e-9, its parameters within
5e-9 of the minimum; so the script then takes plain Newton steps with the library's own gradient
and Hessian (`multinomial._gradient`, `_hessian`, jax in float64) until that sum is below
1e-13, and writes tests/fixtures/dirichlet/expected.json with the inputs, the library's fit as
it stopped ("library_fit") and the finished one ("fit"), each (W | b) with the library's
objective (`_objective`) there, and the metrics of the finished fit's probabilities
(`predict_proba`) on the evaluation rows under calibra's conventions (docs/definitions.md):
accuracy, NLL (label probability clipped below at 2^-52), Brier, top-label ECE with 15
equal-width bins, distinct confidences. src/recalibration/dirichlet_tests.rs compares calibra
with these values.

Rerun from the repository root (dirichletcal 0.5.3 needs Python 3.12 or later):
    python3.12 -m venv /tmp/venv-dirichlet
    /tmp/venv-dirichlet/bin/pip install dirichletcal==0.5.3 jax==0.12.1 numpy==2.5.5 \
        scipy==1.18.1 scikit-learn==1.9.1
    /tmp/venv-dirichlet/bin/python scripts/dirichlet-reference.py
"""

import importlib.metadata
import importlib.util
import json
import pathlib

import numpy as np
from dirichletcal.calib.fulldirichlet import FullDirichletCalibrator
from dirichletcal.calib import multinomial
from scipy.special import log_softmax

ROOT = pathlib.Path(__file__).resolve().parent.parent
# calibra's metrics of a probability vector, as scripts/rivals-reference.py computes them (its
# four classes are this case's too).
_RIVALS = importlib.util.spec_from_file_location("rivals_reference", ROOT / "scripts" / "rivals-reference.py")
rivals_reference = importlib.util.module_from_spec(_RIVALS)
_RIVALS.loader.exec_module(rivals_reference)
OUT = ROOT / "tests" / "fixtures" / "dirichlet"
NUM_CLASSES = 4
ODIR_LAMBDA = 0.01
ODIR_MU = 0.01
PLANTED_WEIGHTS = np.array([
    [0.8, 0.2, 0.0, -0.1],
    [0.1, 1.3, -0.2, 0.0],
    [0.0, 0.3, 0.6, 0.2],
    [-0.2, 0.0, 0.1, 1.1],
])
PLANTED_BIASES = np.array([0.2, -0.3, 0.1, 0.0])


def synthetic_case():
    """Float32 logits [n, K] and labels of the calibration and evaluation parts."""
    rng = np.random.default_rng(11)
    n = 700
    centres = rng.normal(size=(NUM_CLASSES, NUM_CLASSES)) * 2.5
    origin = rng.integers(NUM_CLASSES, size=n)
    logits = (centres[origin] + rng.normal(size=(n, NUM_CLASSES)) * 1.5).astype(np.float32)
    log_q = log_softmax(logits.astype(np.float64), axis=1)
    planted = np.exp(log_softmax(log_q @ PLANTED_WEIGHTS.T + PLANTED_BIASES, axis=1))
    labels = np.array([rng.choice(NUM_CLASSES, p=row / row.sum()) for row in planted])
    return (logits[:400], labels[:400]), (logits[400:], labels[400:])


def library_objective(calibrator, q, y):
    """The library's regularised objective at its fitted map, on its own inputs."""
    fitted = calibrator.calibrator_
    x = np.hstack([np.log(q), np.ones((len(q), 1))])
    target = np.eye(NUM_CLASSES)[y]
    return float(multinomial._objective(
        np.asarray(fitted.weights_).ravel(), x, None, target, NUM_CLASSES, "Full",
        fitted.reg_lambda, fitted.reg_mu, False, "identity", None))


def main():
    (z_cal32, y_cal), (z_eval32, y_eval) = synthetic_case()
    q_cal = np.exp(log_softmax(z_cal32.astype(np.float64), axis=1))
    q_eval = np.exp(log_softmax(z_eval32.astype(np.float64), axis=1))

    calibrator = FullDirichletCalibrator(reg_lambda=ODIR_LAMBDA, reg_mu=ODIR_MU, reg_norm=True,
                                    ref_row=False).fit(q_cal, y_cal)
    fitted = calibrator.calibrator_
    x = np.hstack([np.log(q_cal), np.ones((len(q_cal), 1))])
    target = np.eye(NUM_CLASSES)[y_cal]
    stopped = np.asarray(fitted.weights_).ravel()
    library_fit = {"map": stopped.tolist(), "objective": library_objective(calibrator, q_cal, y_cal)}
    arguments = (x, None, target, NUM_CLASSES, "Full", fitted.reg_lambda, fitted.reg_mu, False,
                 "identity", None)
    finished = stopped.copy()
    for _ in range(10):
        gradient = np.asarray(multinomial._gradient(finished, *arguments))
        if np.abs(gradient).sum() < 1e-13:
            break
        finished -= np.linalg.solve(np.asarray(multinomial._hessian(finished, *arguments)), gradient)
    fitted.weights_ = multinomial._get_weights(finished, NUM_CLASSES, False, "Full")

    fixture = {
        "generator": "scripts/dirichlet-reference.py",
        "versions": {
            name: importlib.metadata.version(name)
            for name in ["dirichletcal", "jax", "numpy", "scipy", "scikit-learn"]
        },
        "num_classes": NUM_CLASSES,
        "lambda": ODIR_LAMBDA,
        "mu": ODIR_MU,
        "planted_weights": PLANTED_WEIGHTS.ravel().tolist(),
        "planted_biases": PLANTED_BIASES.tolist(),
        "calibration_logits": [float(v) for v in z_cal32.ravel()],
        "calibration_labels": y_cal.tolist(),
        "evaluation_logits": [float(v) for v in z_eval32.ravel()],
        "evaluation_labels": y_eval.tolist(),
        "library_fit": library_fit,
        "fit": {
            "map": np.asarray(fitted.weights_).ravel().tolist(),
            "objective": library_objective(calibrator, q_cal, y_cal),
            "evaluation_probabilities": np.asarray(calibrator.predict_proba(q_eval)).ravel().tolist(),
            "evaluation": rivals_reference.metrics_full(
                np.log(np.asarray(calibrator.predict_proba(q_eval))), y_eval),
        },
    }
    OUT.mkdir(parents=True, exist_ok=True)
    text = json.dumps(fixture, indent=1, default=lambda v: v.item())
    (OUT / "expected.json").write_text(text + "\n")
    print(f"wrote {OUT / 'expected.json'}: objective {fixture['fit']['objective']:.15f}")


if __name__ == "__main__":
    main()
