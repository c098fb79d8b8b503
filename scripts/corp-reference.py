#!/usr/bin/env python3
"""Reference values for `corp` (the CORP reliability diagram and score decompositions),
computed independently with scikit-learn and model-diagnostics.

CORP (Dimitriadis, Gneiting & Jordan, "Stable reliability diagrams for probabilistic
classifiers", PNAS 2021): the isotonic (PAV) regression of the outcome on the forecast, and
for a proper score S the decomposition  mean S(forecast) = MCB - DSC + UNC  with
MCB = mean S(forecast) - mean S(PAV-recalibrated), DSC = mean S(base rate) - mean S(PAV-
recalibrated) and UNC = mean S(base rate).

For two synthetic cases of top-label confidences and correctness (numpy's default_rng(11)):

* "ties": 600 confidences in [0.3, 1] rounded to 2 decimals (many ties, pooled first as
  scikit-learn pools them), correct with probability c**1.6 (an overconfident forecaster),
  the rows at confidence 1.0 made correct and those below 0.36 made wrong, so that PAV has pure
  pools at 0 and at 1, where the log score of the recalibrated value is 0;
* "logits": 500 rows of 5-class float32 logits, the top-label confidence of softmax(z) (no
  ties), the label drawn from softmax(z / 1.7) (so the confidence is overconfident);

this script writes tests/fixtures/corp/expected.json with the inputs, scikit-learn's
IsotonicRegression fitted values at the rows (its fit_transform), and model-diagnostics'
`decompose` of the Brier score (SquaredError) and of the log score (LogLoss, which takes
0 * log 0 = 0 as calibra does on pure pools). src/corp_tests.rs compares calibra with them.

Rerun from the repository root:
    python3 -m venv /tmp/corp-venv
    /tmp/corp-venv/bin/pip install numpy scipy scikit-learn==1.9.1 model-diagnostics==1.5.0
    /tmp/corp-venv/bin/python scripts/corp-reference.py
"""

import importlib.metadata
import json
import pathlib

import numpy as np
import sklearn
from model_diagnostics.scoring import LogLoss, SquaredError, decompose
from scipy.special import softmax
from sklearn.isotonic import IsotonicRegression

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "corp"


def ties_case(rng):
    """Rounded confidences with planted overconfidence and pure pools at both ends."""
    confidence = np.round(rng.uniform(0.3, 1.0, size=600), 2)
    correct = rng.uniform(size=600) < confidence**1.6
    correct[confidence == 1.0] = True
    correct[confidence < 0.36] = False
    return confidence, correct


def logits_case(rng):
    """The top-label confidence of float32 logits, labels drawn from softmax(z / 1.7)."""
    logits = (rng.normal(size=(500, 5)) * 2.5).astype(np.float32).astype(np.float64)
    truth = softmax(logits / 1.7, axis=1)
    labels = np.array([rng.choice(5, p=row) for row in truth])
    probabilities = softmax(logits, axis=1)
    confidence = probabilities.max(axis=1)
    correct = probabilities.argmax(axis=1) == labels
    return confidence, correct


def reference(confidence, correct):
    """scikit-learn's fitted values and model-diagnostics' two decompositions."""
    outcome = correct.astype(np.float64)
    fitted = IsotonicRegression().fit_transform(confidence, outcome)
    terms = {}
    for name, score in [("brier", SquaredError()), ("log", LogLoss())]:
        table = decompose(outcome, confidence, scoring_function=score)
        terms[name] = {
            column: float(table[column][0])
            for column in ["miscalibration", "discrimination", "uncertainty", "score"]
        }
    return {
        "confidence": confidence.tolist(),
        "correct": correct.tolist(),
        "isotonic_fitted": fitted.tolist(),
        "decomposition": terms,
    }


def main():
    rng = np.random.default_rng(11)
    cases = {"ties": reference(*ties_case(rng)), "logits": reference(*logits_case(rng))}
    fixture = {
        "generator": "scripts/corp-reference.py",
        "versions": {
            "numpy": np.__version__,
            "scikit-learn": sklearn.__version__,
            "model-diagnostics": importlib.metadata.version("model-diagnostics"),
        },
        "cases": cases,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "expected.json").write_text(json.dumps(fixture, indent=1) + "\n")
    for name, case in cases.items():
        terms = case["decomposition"]
        print(f"{name}: brier {terms['brier']}, log {terms['log']}")


if __name__ == "__main__":
    main()
