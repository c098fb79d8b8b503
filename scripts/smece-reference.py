#!/usr/bin/env python3
"""Reference values for `calibration::smooth_ece`, computed independently with relplot 1.0.3.

relplot is the library of Błasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via
Kernel Smoothing" (ICLR 2024). For each case below this script calls
`relplot.smECE(f, y, return_width=True)`, which returns the smooth ECE of confidences `f` and
0/1 outcomes `y` together with the bandwidth σ it chose (the fixed point smECE_σ = σ, found by
bisection). It writes tests/fixtures/smece/expected.json holding every case's inputs and
relplot's two outputs; src/smooth_calibration_tests.rs and tests/cli.rs compare calibra's values
with them. Definitions: docs/definitions.md.

relplot's grid reflection keeps only half of the kernel mass of an example at confidence 0 or 1
(part of it within 10⁻³ of an end), so each case also records that mass (`relplot_kernel_mass`,
1 when nothing is lost) and the values of the definition summed directly, without a grid for the
examples (`definition_smece`, `definition_bandwidth`, same bandwidth search).

Cases (all drawn from numpy's default_rng with fixed seeds): a calibrated sample (outcomes drawn
with probability equal to the confidence), an overconfident one (outcomes drawn with probability
confidence − 0.15), a small sample (20 rows), ties (confidences on a 0.1 grid), every outcome
correct, and the top-label confidence and correctness of the bundled cross-entropy network's
logits of the first 64 test images (tests/fixtures/fmnist-ce-first64-logits.json, labels from
assets/fashion-mnist) at T = 1 and T = 2: softmax in float64 of the float32 logits, prediction
the arg-max with ties to the lowest index.

Rerun from the repository root:
    python3 -m venv /tmp/relplot-venv
    /tmp/relplot-venv/bin/pip install relplot==1.0.3 numpy scipy matplotlib
    /tmp/relplot-venv/bin/python scripts/smece-reference.py
"""

import gzip
import importlib.metadata
import json
import pathlib

import numpy as np
import relplot
from relplot.kernels import ReflectedGaussianKernel
import scipy
from scipy.special import log_softmax

RELPLOT_VERSION = "1.0.3"
ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "smece"
LOGITS = ROOT / "tests" / "fixtures" / "fmnist-ce-first64-logits.json"
TEST_LABELS = ROOT / "assets" / "fashion-mnist" / "t10k-labels-idx1-ubyte.gz"
NUM_CLASSES = 10


def synthetic_cases():
    """(name, confidences, outcomes) of the synthetic cases; confidences in [0.1, 1]."""
    rng = np.random.default_rng(0)
    cases = []

    confidence = rng.uniform(0.1, 1.0, size=5000)
    cases.append(("calibrated", confidence, rng.uniform(size=5000) < confidence))

    confidence = 0.4 + 0.6 * rng.beta(5.0, 1.5, size=3000)
    outcome = rng.uniform(size=3000) < confidence - 0.15
    cases.append(("overconfident", confidence, outcome))

    confidence = rng.uniform(0.3, 1.0, size=20)
    cases.append(("small", confidence, rng.uniform(size=20) < confidence))

    confidence = np.round(rng.uniform(0.15, 0.94, size=1000) * 10.0) / 10.0
    cases.append(("ties", confidence, rng.uniform(size=1000) < confidence**2))

    confidence = rng.uniform(0.6, 1.0, size=500)
    cases.append(("all-correct", confidence, np.ones(500, dtype=bool)))
    return cases


def test_labels(count):
    """The first `count` labels of the Fashion-MNIST test set (IDX, gzipped)."""
    data = gzip.decompress(TEST_LABELS.read_bytes())
    if int.from_bytes(data[:4], "big") != 0x801:
        raise SystemExit(f"{TEST_LABELS}: not an IDX labels file")
    return np.frombuffer(data[8 : 8 + count], dtype=np.uint8).astype(np.int64)


def logits_cases():
    """Top-label confidence and correctness of the bundled network's logits at T = 1 and 2."""
    logits = np.array(json.loads(LOGITS.read_text()), dtype=np.float32).reshape(-1, NUM_CLASSES)
    labels = test_labels(len(logits))
    # np.argmax returns the first maximum: ties go to the lowest index, as in calibra.
    correct = np.argmax(logits, axis=1) == labels
    cases = []
    for temperature in (1.0, 2.0):
        log_probabilities = log_softmax(logits.astype(np.float64) / temperature, axis=1)
        confidence = np.exp(log_probabilities.max(axis=1))
        name = f"fmnist-ce-first64-T{temperature:g}"
        cases.append((name, confidence, correct, temperature, labels))
    return cases


def definition_smece_at(f, y, sigma):
    """smECE_σ summed directly from the definition: the reflected kernel
    K(t, f) = Σ_k φ(t − f − 2k) + φ(t + f − 2k) (|k| ≤ 2) evaluated at every example and at
    4001 points t of [0, 1], ∫|Σ K·(y − f)| / ∫ Σ K by the trapezoid rule. No grid for the
    examples, no convolution: an independent check of calibra's binned computation."""
    t = np.linspace(0.0, 1.0, 4001)
    weights = np.full(len(t), 1.0)
    weights[[0, -1]] = 0.5
    residual_sum = np.zeros(len(t))
    count_sum = np.zeros(len(t))
    for start in range(0, len(f), 500):
        fi, ri = f[start : start + 500], (y - f)[start : start + 500]
        kernel = np.zeros((len(t), len(fi)))
        for k in range(-2, 3):
            for image in (fi + 2 * k, -fi + 2 * k):
                kernel += np.exp(-0.5 * ((t[:, None] - image[None, :]) / sigma) ** 2)
        residual_sum += kernel @ ri
        count_sum += kernel.sum(axis=1)
    return float(np.sum(weights * np.abs(residual_sum)) / np.sum(weights * count_sum))


def definition_smece(f, y):
    """The fixed point searched as relplot searches it (10 bisection steps on (0, 1], a step
    at σ moving up when σ < 0.001 or smECE_σ > σ), with smECE_σ from the definition."""
    below, above, at_above = 0.0, 1.0, None
    for _ in range(10):
        middle = (below + above) / 2
        error = None if middle < 0.001 else definition_smece_at(f, y, middle)
        if error is None or middle < error:
            below = middle
        else:
            above, at_above = middle, error
    return (definition_smece_at(f, y, above) if at_above is None else at_above), above


def relplot_kernel_mass(f, sigma):
    """Mean mass over [0, 1] of relplot's kernel around the examples: 1 for the definition,
    less where relplot's reflection drops part of it (examples within 10⁻³ of 0 or 1)."""
    t = np.linspace(0.0, 1.0, 20001)
    density = ReflectedGaussianKernel(sigma).kde(f, t)
    return float(np.trapezoid(density, t))


def case_json(name, confidence, correct, **extra):
    f, y = confidence.astype(np.float64), correct.astype(np.float64)
    smece, bandwidth = relplot.smECE(f, y, return_width=True)
    definition, definition_bandwidth = definition_smece(f, y)
    return {
        "name": name,
        **extra,
        "confidence": [float(c) for c in confidence],
        "correct": [bool(c) for c in correct],
        "smece": float(smece),
        "bandwidth": float(bandwidth),
        "relplot_kernel_mass": relplot_kernel_mass(f, bandwidth),
        "definition_smece": definition,
        "definition_bandwidth": definition_bandwidth,
    }


def main():
    installed = importlib.metadata.version("relplot")
    if installed != RELPLOT_VERSION:
        raise SystemExit(f"relplot {installed} is installed; the reference needs {RELPLOT_VERSION}")
    cases = [case_json(*case) for case in synthetic_cases()]
    for name, confidence, correct, temperature, labels in logits_cases():
        cases.append(
            case_json(
                name,
                confidence,
                correct,
                temperature=temperature,
                logits=str(LOGITS.relative_to(ROOT)),
                labels=[int(label) for label in labels],
            )
        )
    expected = {
        "generated_by": "scripts/smece-reference.py",
        "versions": {
            "relplot": RELPLOT_VERSION,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "cases": cases,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    for case in cases:
        print(
            f"{case['name']:<22} n = {len(case['confidence']):>5}  relplot: smECE "
            f"{case['smece']:.6f} σ {case['bandwidth']:.6f} (kernel mass "
            f"{case['relplot_kernel_mass']:.4f})  definition: smECE "
            f"{case['definition_smece']:.6f} σ {case['definition_bandwidth']:.6f}"
        )


if __name__ == "__main__":
    main()
