//! Corruptions of the test images for the shift lab, in the spirit of MNIST-C (Mu & Gilmer,
//! "MNIST-C: A Robustness Benchmark for Computer Vision", 2019) and CIFAR-10-C (Hendrycks &
//! Dietterich, "Benchmarking Neural Network Robustness to Common Corruptions and
//! Perturbations", ICLR 2019): each at a severity from 1 to 5 (inversion: 1, on), 0 being the
//! clean images.
//!
//! Pixels are read as `v = byte / 255` and written back as `round(255·clamp(v, 0, 1))`. At
//! severity `s`:
//!
//! | corruption  | what it does to each image                                                 |
//! |-------------|----------------------------------------------------------------------------|
//! | rotation    | turned by ±6·s degrees about its centre (13.5, 13.5), the sign drawn per image; bilinear, black outside |
//! | blur        | Gaussian blur of σ = 0.5·s px (separable, radius ⌊3σ + ½⌋, weights summing to 1, black outside) |
//! | noise       | `v + N(0, (0.08·s)²)` per pixel, clipped to [0, 1]                          |
//! | contrast    | `m + c·(v − m)`, `m` the image's mean, `c` = 0.6, 0.45, 0.3, 0.2, 0.1        |
//! | translation | moved by `(round(s·cos θ), round(s·sin θ))` px, θ uniform per image, black fill |
//! | inversion   | `1 − v`                                                                     |
//!
//! Rotation and blur are those of `scipy.ndimage.rotate(image, angle, reshape=False, order=1)`
//! and `scipy.ndimage.gaussian_filter(image, σ, mode="constant", truncate=3)`, which the tests
//! check against values scipy computed (`scripts/shift-reference.py`). Image `i`'s random draws
//! come from ChaCha8 seeded with the seed, stream `i`, so an image is corrupted the same way
//! whether the whole set or that image alone is ([`corrupt_rows`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use crate::data::{IMAGE_PIXELS, IMAGE_SIDE};

/// The highest severity of any corruption.
pub const MAX_SEVERITY: u8 = 5;

/// Degrees of rotation per severity: the network, trained on upright garments, loses a third
/// of its accuracy by 15°, so the steps are small enough for the sweep to show the fall.
const ROTATION_STEP: u32 = 6;

/// Contrast factors `c` of severities 1 to 5.
const CONTRAST: [f64; 5] = [0.6, 0.45, 0.3, 0.2, 0.1];

/// A corruption of the shift lab (serde: its lowercase name, the link's value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Corruption {
    Rotation,
    Blur,
    Noise,
    Contrast,
    Translation,
    Inversion,
}

/// Why the images cannot be corrupted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ShiftError {
    #[error("{bytes} bytes are not a whole number of 28×28 images")]
    NotImages { bytes: usize },
    #[error("{corruption:?} has severities 0 to {max}, not {severity}")]
    SeverityOutOfRange {
        corruption: Corruption,
        severity: u8,
        max: u8,
    },
    #[error("row {row} is not one of the {images} images")]
    NoSuchRow { row: usize, images: usize },
}

impl Corruption {
    pub const ALL: [Corruption; 6] = [
        Self::Rotation,
        Self::Blur,
        Self::Noise,
        Self::Contrast,
        Self::Translation,
        Self::Inversion,
    ];

    /// The highest severity: 5, or 1 for inversion (on or off).
    pub fn max_severity(self) -> u8 {
        match self {
            Self::Inversion => 1,
            _ => MAX_SEVERITY,
        }
    }

    /// What the page calls it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Rotation => "rotation",
            Self::Blur => "Gaussian blur",
            Self::Noise => "Gaussian noise",
            Self::Contrast => "contrast reduction",
            Self::Translation => "translation",
            Self::Inversion => "inversion",
        }
    }

    /// The parameter `severity` sets, in words ("±45°", "σ = 1.0 px"); "none" at 0.
    pub fn parameter(self, severity: u8) -> String {
        if severity == 0 {
            return "none".to_string();
        }
        let s = f64::from(severity);
        match self {
            Self::Rotation => format!("±{}°", ROTATION_STEP * u32::from(severity)),
            Self::Blur => format!("σ = {:.1} px", 0.5 * s),
            Self::Noise => format!("σ = {:.2}", 0.08 * s),
            Self::Contrast => format!("contrast × {:.2}", contrast(severity)),
            Self::Translation => format!("{} px", severity),
            Self::Inversion => "inverted".to_string(),
        }
    }
}

fn contrast(severity: u8) -> f64 {
    CONTRAST[usize::from(severity.clamp(1, MAX_SEVERITY)) - 1]
}

/// The corrupted copy of `pixels` (`[n, 28, 28]`) at `severity` (0: an unchanged copy).
///
/// # Errors
/// [`ShiftError::NotImages`], [`ShiftError::SeverityOutOfRange`].
pub fn corrupt(
    pixels: &[u8],
    corruption: Corruption,
    severity: u8,
    seed: u64,
) -> Result<Vec<u8>, ShiftError> {
    corrupt_from(pixels, 0, corruption, severity, seed)
}

/// Images `first_row..` of a set, given as `pixels`, corrupted as [`corrupt`] corrupts them in
/// the whole set: a set can be corrupted a part at a time.
///
/// # Errors
/// As [`corrupt`].
pub fn corrupt_from(
    pixels: &[u8],
    first_row: usize,
    corruption: Corruption,
    severity: u8,
    seed: u64,
) -> Result<Vec<u8>, ShiftError> {
    images_in(pixels)?;
    check_severity(corruption, severity)?;
    let mut out = Vec::with_capacity(pixels.len());
    for (index, image) in pixels.chunks_exact(IMAGE_PIXELS).enumerate() {
        corrupt_image(
            image,
            first_row + index,
            corruption,
            severity,
            seed,
            &mut out,
        );
    }
    Ok(out)
}

/// Images `rows` of `pixels`, corrupted as [`corrupt`] corrupts them in the whole set.
///
/// # Errors
/// As [`corrupt`], and [`ShiftError::NoSuchRow`].
pub fn corrupt_rows(
    pixels: &[u8],
    rows: &[usize],
    corruption: Corruption,
    severity: u8,
    seed: u64,
) -> Result<Vec<u8>, ShiftError> {
    let images = images_in(pixels)?;
    check_severity(corruption, severity)?;
    let mut out = Vec::with_capacity(rows.len() * IMAGE_PIXELS);
    for &row in rows {
        if row >= images {
            return Err(ShiftError::NoSuchRow { row, images });
        }
        let image = &pixels[row * IMAGE_PIXELS..(row + 1) * IMAGE_PIXELS];
        corrupt_image(image, row, corruption, severity, seed, &mut out);
    }
    Ok(out)
}

fn check_severity(corruption: Corruption, severity: u8) -> Result<(), ShiftError> {
    if severity > corruption.max_severity() {
        return Err(ShiftError::SeverityOutOfRange {
            corruption,
            severity,
            max: corruption.max_severity(),
        });
    }
    Ok(())
}

/// Appends `image`, row `row` of its set, corrupted, to `out`.
fn corrupt_image(
    image: &[u8],
    row: usize,
    corruption: Corruption,
    severity: u8,
    seed: u64,
    out: &mut Vec<u8>,
) {
    if severity == 0 {
        out.extend_from_slice(image);
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(row as u64);
    let values: Vec<f64> = image.iter().map(|&b| f64::from(b) / 255.0).collect();
    let s = f64::from(severity);
    let corrupted = match corruption {
        Corruption::Rotation => {
            let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
            rotate(&values, sign * f64::from(ROTATION_STEP) * s)
        }
        Corruption::Blur => blur(&values, 0.5 * s),
        Corruption::Noise => values
            .iter()
            .map(|v| v + 0.08 * s * rng.sample::<f64, _>(StandardNormal))
            .collect(),
        Corruption::Contrast => {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let c = contrast(severity);
            values.iter().map(|v| mean + c * (v - mean)).collect()
        }
        Corruption::Translation => {
            let theta = std::f64::consts::TAU * rng.random::<f64>();
            let length = s;
            let (dx, dy) = (length * theta.cos(), length * theta.sin());
            translate(&values, dx.round() as i64, dy.round() as i64)
        }
        Corruption::Inversion => values.iter().map(|v| 1.0 - v).collect(),
    };
    out.extend(
        corrupted
            .iter()
            .map(|v| (255.0 * v.clamp(0.0, 1.0)).round() as u8),
    );
}

fn images_in(pixels: &[u8]) -> Result<usize, ShiftError> {
    if !pixels.len().is_multiple_of(IMAGE_PIXELS) {
        return Err(ShiftError::NotImages {
            bytes: pixels.len(),
        });
    }
    Ok(pixels.len() / IMAGE_PIXELS)
}

/// The value at `(x, y)`, black outside the image.
fn at(values: &[f64], x: i64, y: i64) -> f64 {
    let side = IMAGE_SIDE as i64;
    if (0..side).contains(&x) && (0..side).contains(&y) {
        values[(y * side + x) as usize]
    } else {
        0.0
    }
}

/// One image turned by `degrees` about its centre, bilinear, black outside.
fn rotate(values: &[f64], degrees: f64) -> Vec<f64> {
    let centre = (IMAGE_SIDE as f64 - 1.0) / 2.0;
    let (sin, cos) = degrees.to_radians().sin_cos();
    let mut out = vec![0.0; IMAGE_PIXELS];
    for y in 0..IMAGE_SIDE {
        for x in 0..IMAGE_SIDE {
            let (dx, dy) = (x as f64 - centre, y as f64 - centre);
            let source_x = centre + cos * dx - sin * dy;
            let source_y = centre + sin * dx + cos * dy;
            let (x0, y0) = (source_x.floor(), source_y.floor());
            let (fx, fy) = (source_x - x0, source_y - y0);
            let (x0, y0) = (x0 as i64, y0 as i64);
            out[y * IMAGE_SIDE + x] = (1.0 - fy)
                * ((1.0 - fx) * at(values, x0, y0) + fx * at(values, x0 + 1, y0))
                + fy * ((1.0 - fx) * at(values, x0, y0 + 1) + fx * at(values, x0 + 1, y0 + 1));
        }
    }
    out
}

/// One image blurred by a Gaussian of `sigma` pixels, separable, black outside.
fn blur(values: &[f64], sigma: f64) -> Vec<f64> {
    // scipy.ndimage.gaussian_filter's radius at truncate = 3: ⌊3σ + ½⌋.
    let radius = (3.0 * sigma + 0.5).floor() as i64;
    let weights: Vec<f64> = (-radius..=radius)
        .map(|d| (-(d * d) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let weights: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let pass = |source: &[f64], horizontal: bool| -> Vec<f64> {
        let mut out = vec![0.0; IMAGE_PIXELS];
        for y in 0..IMAGE_SIDE as i64 {
            for x in 0..IMAGE_SIDE as i64 {
                out[(y as usize) * IMAGE_SIDE + x as usize] = (-radius..=radius)
                    .zip(&weights)
                    .map(|(d, w)| {
                        let (sx, sy) = if horizontal { (x + d, y) } else { (x, y + d) };
                        w * at(source, sx, sy)
                    })
                    .sum();
            }
        }
        out
    };
    pass(&pass(values, true), false)
}

/// One image moved `dx` px right and `dy` px down, black where nothing moved in.
fn translate(values: &[f64], dx: i64, dy: i64) -> Vec<f64> {
    let mut out = vec![0.0; IMAGE_PIXELS];
    for y in 0..IMAGE_SIDE as i64 {
        for x in 0..IMAGE_SIDE as i64 {
            out[(y as usize) * IMAGE_SIDE + x as usize] = at(values, x - dx, y - dy);
        }
    }
    out
}

#[cfg(test)]
#[path = "shift_tests.rs"]
mod tests;
