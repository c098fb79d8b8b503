#!/usr/bin/env python3
"""Reference scores of the feature-based OOD detectors (`calibra::ood_features`), computed with
pytorch-ood 0.4.0, the library OpenOOD-style benchmarks use.

Writes a small deterministic synthetic case to tests/fixtures/ood_features/: 300 fitting rows of
128 float32 "penultimate features" with labels in 0..10 (`fit-features.npy`, `fit-labels.npy`),
200 in-distribution (ID) and 100 out-of-distribution (OOD) rows to score (`id-features.npy`,
`ood-features.npy`), a last layer (`last-weight.npy` [10, 128], `last-bias.npy` [1, 10], float32),
and `expected.json`: every detector's score of every ID and OOD row, in calibra's sign (higher =
more in-distribution), and its FPR95 and AUROC. src/ood_features_tests.rs compares them (1e-6
relative on the scores, the metrics exactly).

Features are ReLU(class mean + N(0, 1)) with class means uniform in [0, 2] per unit (ID), and
ReLU(one mean uniform in [0, 1.5] + N(0, 1.3²)) (OOD); the last layer's rows follow the class
means. No unit is dead, so the covariance is invertible and pytorch-ood's ridge is negligible.

Every detector is pytorch-ood's, run in float64 (torch's default dtype set to float64; ViM
casts to float32 with `Tensor.float()`, which this script makes keep float64), fitted with
`fit_features` / `fit_feature_maps` on the fitting rows. Where pytorch-ood's convention differs
from the paper's, the script converts, as docs/definitions.md says:
* Mahalanobis: pytorch-ood's covariance is the sum of centred outer products (not divided by N)
  plus 1e-6·I, and its outlier score half the smallest squared distance; the paper's score is
  -min_k d_k with the covariance divided by N, so calibra's = -2·N·pytorch-ood's (the ridge
  moves it by at most 1e-6 / the smallest eigenvalue of the sum, relative: checked below 1e-7).
* KNN, ReAct, ASH, ViM, GradNorm: calibra's score is minus pytorch-ood's outlier score. KNN is
  run with k = 5 (`knn_k` in the JSON); ReAct at the 90th percentile (its threshold is
  `react_threshold`), ASH-S at 90%, ViM with a 64-dimensional principal subspace, GradNorm on
  the last layer's weight only, at T = 1.
Metrics: AUROC from sklearn.metrics.roc_auc_score; FPR95 in NumPy, the share of OOD scores at or
above the ceil(0.95·n_id)-th largest ID score.

Rerun from the repository root:
  python3 -m venv /tmp/venv-features
  /tmp/venv-features/bin/pip install pytorch-ood==0.4.0 torch==2.15.0 torchvision==0.29.2 \
      numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1
  /tmp/venv-features/bin/python scripts/ood-features-reference.py
"""

import json
import math
import pathlib

import numpy as np
import pytorch_ood
import sklearn
import torch
from pytorch_ood.detector import ASH, KNN, GradNorm, Mahalanobis, ReAct, ViM
from sklearn.metrics import roc_auc_score

SEED = 41
WIDTH, NUM_CLASSES = 128, 10
N_FIT, N_ID, N_OOD = 300, 200, 100
KNN_K = 5
PERCENTILE = 0.9
VIM_DIMENSION = 64
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ood_features"


def synthetic_case():
    """Fitting, ID and OOD features, the fitting labels and the last layer (see the docstring)."""
    rng = np.random.default_rng(SEED)
    means = rng.uniform(0.0, 2.0, (NUM_CLASSES, WIDTH))

    def in_distribution(n):
        labels = rng.permutation(np.arange(n) % NUM_CLASSES)
        features = np.maximum(means[labels] + rng.normal(0.0, 1.0, (n, WIDTH)), 0.0)
        return features.astype(np.float32), labels.astype(np.int64)

    fit, fit_labels = in_distribution(N_FIT)
    scored, _ = in_distribution(N_ID)
    ood_mean = rng.uniform(0.0, 1.5, (1, WIDTH))
    ood = np.maximum(ood_mean + rng.normal(0.0, 1.3, (N_OOD, WIDTH)), 0.0).astype(np.float32)
    weight = 0.2 * (means - means.mean(axis=0)) + rng.normal(0.0, 0.05, (NUM_CLASSES, WIDTH))
    bias = rng.normal(0.0, 0.1, (1, NUM_CLASSES))
    return fit, fit_labels, scored, ood, weight.astype(np.float32), bias.astype(np.float32)


def fpr95(id_scores, ood_scores):
    """The share of OOD scores at or above the ceil(0.95·n_id)-th largest ID score."""
    rank = -(-95 * len(id_scores) // 100)
    threshold = np.sort(id_scores)[::-1][rank - 1]
    return float(np.mean(ood_scores >= threshold))


def main():
    torch.set_default_dtype(torch.float64)
    # ViM calls Tensor.float(); keep float64 so that its arithmetic is the others'.
    torch.Tensor.float = lambda self, *args, **kwargs: self
    fit, fit_labels, scored, ood, weight, bias = synthetic_case()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, array in [
        ("fit-features", fit),
        ("fit-labels", fit_labels),
        ("id-features", scored),
        ("ood-features", ood),
        ("last-weight", weight),
        ("last-bias", bias),
    ]:
        np.save(OUT / f"{name}.npy", array)

    t = lambda a: torch.tensor(a, dtype=torch.float64)
    z_fit, y_fit = t(fit), torch.tensor(fit_labels)
    head = torch.nn.Linear(WIDTH, NUM_CLASSES)
    with torch.no_grad():
        head.weight.copy_(t(weight))
        head.bias.copy_(t(bias[0]))
    flat_head = lambda maps: head(maps.flatten(1))

    mahalanobis = Mahalanobis(None).fit_features(z_fit, y_fit)
    smallest = torch.linalg.eigvalsh(mahalanobis.cov - 1e-6 * torch.eye(WIDTH))[0].item()
    assert 1e-6 / smallest < 1e-7, smallest
    knn = KNN(None, k=KNN_K).fit_features(z_fit, y_fit)
    react = ReAct(backbone=None, head=head, percentile=PERCENTILE)
    react.fit_feature_maps(z_fit, y_fit)
    ash = ASH(backbone=None, head=flat_head, variant="ash-s", percentile=PERCENTILE)
    vim = ViM(None, d=VIM_DIMENSION, w=t(weight), b=t(bias[0])).fit_features(z_fit, y_fit)
    gradnorm = GradNorm(head, param_filter=lambda name: name == "weight")
    gradnorm.to("cpu")

    detectors = {
        "mahalanobis": lambda z: -2.0 * N_FIT * mahalanobis.predict_features(z),
        "knn": lambda z: -knn.predict_features(z),
        "react": lambda z: -react.predict_feature_maps(z),
        "ash": lambda z: -ash.predict_feature_maps(z.view(len(z), WIDTH, 1, 1)),
        "vim": lambda z: -vim.predict_features(z),
        "gradnorm": lambda z: -gradnorm.predict(z),
    }
    expected = {
        "pytorch_ood": pytorch_ood.__version__ if hasattr(pytorch_ood, "__version__") else "0.4.0",
        "torch": torch.__version__,
        "scikit_learn": sklearn.__version__,
        "knn_k": KNN_K,
        "react_threshold": react.threshold,
        "vim_dimension": VIM_DIMENSION,
        "detectors": {},
    }
    for name, score in detectors.items():
        id_scores = score(t(scored)).detach().numpy().astype(np.float64)
        ood_scores = score(t(ood)).detach().numpy().astype(np.float64)
        assert np.all(np.isfinite(id_scores)) and np.all(np.isfinite(ood_scores)), name
        both = np.sort(np.concatenate([id_scores, ood_scores]))
        gaps = np.diff(both) / np.maximum(np.abs(both[1:]), 1e-300)
        # Scores closer than this could be ordered differently by other rounding.
        assert gaps.min() > 1e-9, (name, gaps.min())
        labels = np.concatenate([np.ones(N_ID), np.zeros(N_OOD)])
        expected["detectors"][name] = {
            "id": id_scores.tolist(),
            "ood": ood_scores.tolist(),
            "fpr95": fpr95(id_scores, ood_scores),
            "auroc": float(roc_auc_score(labels, np.concatenate([id_scores, ood_scores]))),
        }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    for name, values in expected["detectors"].items():
        print(f"{name:12} fpr95 {values['fpr95']:.4f} auroc {values['auroc']:.4f}")


if __name__ == "__main__":
    main()
