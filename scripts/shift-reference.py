#!/usr/bin/env python3
"""Reference values for `shift` (the shift lab's corruptions), computed with scipy.ndimage.

One deterministic 28×28 test image, a bright off-centre ring with a bar (no randomness), in
[0, 1] units, is rotated with scipy.ndimage.rotate(image, angle, reshape=False, order=1,
mode="constant", cval=0) at +30 and -45 degrees, and blurred with
scipy.ndimage.gaussian_filter(image, sigma, mode="constant", cval=0, truncate=3.0) at
σ = 0.5, 1.5 and 2.5, all in float64; each result is quantised as calibra stores pixels,
round(255·clamp(v, 0, 1)) (numpy's round: halves to even), and written with the image's bytes
to tests/fixtures/shift/expected.json. src/shift_tests.rs compares calibra's rotation and blur
with these bytes.

Rerun from the repository root (numpy 2.4.6 and scipy 1.17.1 wrote the committed file):
    python3 -m venv /tmp/shift-venv
    /tmp/shift-venv/bin/pip install numpy scipy
    /tmp/shift-venv/bin/python scripts/shift-reference.py
"""

import json
from pathlib import Path

import numpy as np
import scipy
from scipy import ndimage

SIDE = 28


def test_image() -> np.ndarray:
    """A ring of radius 7 about (11, 15) and a bar, as bytes: asymmetric, so that a turn or a
    blur in the wrong direction shows."""
    y, x = np.mgrid[0:SIDE, 0:SIDE].astype(np.float64)
    ring = np.exp(-((np.hypot(x - 15.0, y - 11.0) - 7.0) ** 2) / 2.0)
    bar = ((x >= 5) & (x <= 8) & (y >= 16) & (y <= 25)).astype(np.float64)
    return np.round(255.0 * np.clip(np.maximum(ring, 0.8 * bar), 0.0, 1.0)).astype(np.uint8)


def quantise(values: np.ndarray) -> list[int]:
    return np.round(255.0 * np.clip(values, 0.0, 1.0)).astype(np.uint8).ravel().tolist()


def main() -> None:
    image = test_image()
    values = image.astype(np.float64) / 255.0
    expected = {
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "image": image.ravel().tolist(),
        "rotations": [
            {"degrees": angle, "pixels": quantise(ndimage.rotate(values, angle, reshape=False, order=1, mode="constant", cval=0.0))}
            for angle in (30.0, -45.0)
        ],
        "blurs": [
            {"sigma": sigma, "pixels": quantise(ndimage.gaussian_filter(values, sigma, mode="constant", cval=0.0, truncate=3.0))}
            for sigma in (0.5, 1.5, 2.5)
        ],
    }
    out = Path("tests/fixtures/shift/expected.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(expected) + "\n")
    print(f"wrote {out} (numpy {np.__version__}, scipy {scipy.__version__})")


if __name__ == "__main__":
    main()
