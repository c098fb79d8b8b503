//! Image data: the IDX file format, Fashion-MNIST's classes, and seeded splits.
//!
//! IDX (LeCun et al., the MNIST distribution format) is a big-endian header — two zero bytes, a
//! type byte (`0x08` = unsigned byte), the number of dimensions, then each dimension as a `u32` —
//! followed by the values in row-major order. Files may be gzipped (as Debian's
//! `dataset-fashion-mnist` and the committed assets are); gzip is recognised by its magic bytes,
//! not by the file name.
//!
//! Synthetic out-of-distribution images ([`noise_images`]) draw every pixel independently, in
//! `[0, 1]` units, from either `clip(N(0.5, 0.5²), 0, 1)` or `U[0, 1]`, and store it as the byte
//! `round(255·v)`, the quantisation of the real images (the network divides by 255 again). The
//! draws come from ChaCha8 seeded with the seed, image by image and pixel by pixel in row-major
//! order, so a seed gives the same images on every platform.

use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::Deserialize;

/// Side of a square image, in pixels.
pub const IMAGE_SIDE: usize = 28;
/// Pixels in one image.
pub const IMAGE_PIXELS: usize = IMAGE_SIDE * IMAGE_SIDE;

/// Fashion-MNIST's class names, in label order (Xiao et al., 2017).
pub const FASHION_MNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];

/// Where Debian's `dataset-fashion-mnist` package puts the data set.
pub const DEBIAN_FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// What went wrong reading image data; each variant names the source.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{source_name}: cannot read: {error}")]
    Io {
        source_name: String,
        error: std::io::Error,
    },
    #[error("{source_name}: not an IDX file of unsigned bytes ({detail})")]
    NotIdx { source_name: String, detail: String },
    #[error("{source_name}: expected {expected} dimension(s), found {found}")]
    WrongRank {
        source_name: String,
        expected: usize,
        found: usize,
    },
    #[error("{source_name}: images are {rows}x{cols}, expected {IMAGE_SIDE}x{IMAGE_SIDE}")]
    WrongImageSize {
        source_name: String,
        rows: usize,
        cols: usize,
    },
    #[error("{source_name}: header promises {expected} bytes of data, file holds {found}")]
    Truncated {
        source_name: String,
        expected: usize,
        found: usize,
    },
    #[error("{images} images but {labels} labels")]
    CountMismatch { images: usize, labels: usize },
    #[error(
        "Fashion-MNIST not found in {dir}: install it with `apt-get install dataset-fashion-mnist` \
         or pass --data-dir with the four *-ubyte.gz files"
    )]
    MissingDataSet { dir: PathBuf },
}

/// Images of [`IMAGE_SIDE`]² unsigned-byte pixels, stored row-major as `[n, 28, 28]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Images {
    pixels: Vec<u8>,
}

impl Images {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.pixels.len() / IMAGE_PIXELS
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.pixels.is_empty()
    }

    /// All pixels, `[n, 28, 28]` row-major.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    /// The pixels of image `index`.
    ///
    /// # Panics
    /// When `index >= self.len()` (an index bug, not bad input).
    pub fn image(&self, index: usize) -> &[u8] {
        &self.pixels[index * IMAGE_PIXELS..(index + 1) * IMAGE_PIXELS]
    }

    /// The images at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> Images {
        let mut pixels = Vec::with_capacity(indices.len() * IMAGE_PIXELS);
        for &index in indices {
            pixels.extend_from_slice(self.image(index));
        }
        Images { pixels }
    }
}

/// A labelled set of images.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub images: Images,
    pub labels: Vec<u8>,
}

impl Dataset {
    /// Pairs images with labels.
    ///
    /// # Errors
    /// [`DataError::CountMismatch`] when the counts differ.
    pub fn new(images: Images, labels: Vec<u8>) -> Result<Self, DataError> {
        if images.len() != labels.len() {
            return Err(DataError::CountMismatch {
                images: images.len(),
                labels: labels.len(),
            });
        }
        Ok(Self { images, labels })
    }

    /// Reads an images file and a labels file (IDX, gzipped or not).
    ///
    /// # Errors
    /// Any [`DataError`] from either file, or a count mismatch.
    pub fn load(images: &Path, labels: &Path) -> Result<Self, DataError> {
        Self::new(load_images(images)?, load_labels(labels)?)
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The examples at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> Dataset {
        Dataset {
            images: self.images.select(indices),
            labels: indices.iter().map(|&i| self.labels[i]).collect(),
        }
    }
}

/// The two halves of Fashion-MNIST as shipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FashionMnistPart {
    Train,
    Test,
}

impl FashionMnistPart {
    fn prefix(self) -> &'static str {
        match self {
            FashionMnistPart::Train => "train",
            FashionMnistPart::Test => "t10k",
        }
    }
}

/// Paths of the images and labels files of one part of Fashion-MNIST in `dir`.
pub fn fashion_mnist_paths(dir: &Path, part: FashionMnistPart) -> (PathBuf, PathBuf) {
    let prefix = part.prefix();
    (
        dir.join(format!("{prefix}-images-idx3-ubyte.gz")),
        dir.join(format!("{prefix}-labels-idx1-ubyte.gz")),
    )
}

/// Loads one part of Fashion-MNIST from `dir`.
///
/// # Errors
/// [`DataError::MissingDataSet`] (with how to get it) when the files are absent, or any error
/// reading them.
pub fn load_fashion_mnist(dir: &Path, part: FashionMnistPart) -> Result<Dataset, DataError> {
    let (images, labels) = fashion_mnist_paths(dir, part);
    if !images.exists() || !labels.exists() {
        return Err(DataError::MissingDataSet {
            dir: dir.to_path_buf(),
        });
    }
    Dataset::load(&images, &labels)
}

/// Reads an IDX images file (`[n, 28, 28]` unsigned bytes) from disk.
///
/// # Errors
/// [`DataError::Io`] or any parse error of [`parse_idx_images`].
pub fn load_images(path: &Path) -> Result<Images, DataError> {
    parse_idx_images(&read_file(path)?, &path.display().to_string())
}

/// Reads an IDX labels file (`[n]` unsigned bytes) from disk.
///
/// # Errors
/// [`DataError::Io`] or any parse error of [`parse_idx_labels`].
pub fn load_labels(path: &Path) -> Result<Vec<u8>, DataError> {
    parse_idx_labels(&read_file(path)?, &path.display().to_string())
}

fn read_file(path: &Path) -> Result<Vec<u8>, DataError> {
    std::fs::read(path).map_err(|error| DataError::Io {
        source_name: path.display().to_string(),
        error,
    })
}

/// Parses IDX images, gzipped or not; `source_name` names the data in error messages.
///
/// # Errors
/// Not IDX, not rank 3, not 28×28, or shorter than its header says.
pub fn parse_idx_images(bytes: &[u8], source_name: &str) -> Result<Images, DataError> {
    let (dimensions, data) = parse_idx(bytes, source_name, 3)?;
    let (rows, cols) = (dimensions[1], dimensions[2]);
    if rows != IMAGE_SIDE || cols != IMAGE_SIDE {
        return Err(DataError::WrongImageSize {
            source_name: source_name.to_string(),
            rows,
            cols,
        });
    }
    Ok(Images { pixels: data })
}

/// Parses IDX labels, gzipped or not; `source_name` names the data in error messages.
///
/// # Errors
/// Not IDX, not rank 1, or shorter than its header says.
pub fn parse_idx_labels(bytes: &[u8], source_name: &str) -> Result<Vec<u8>, DataError> {
    parse_idx(bytes, source_name, 1).map(|(_, data)| data)
}

/// Gzip's two magic bytes (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// IDX type byte for unsigned bytes.
const IDX_UNSIGNED_BYTE: u8 = 0x08;

fn parse_idx(
    bytes: &[u8],
    source_name: &str,
    rank: usize,
) -> Result<(Vec<usize>, Vec<u8>), DataError> {
    let not_idx = |detail: String| DataError::NotIdx {
        source_name: source_name.to_string(),
        detail,
    };
    let raw;
    let bytes = if bytes.starts_with(&GZIP_MAGIC) {
        let mut decoded = Vec::new();
        GzDecoder::new(bytes)
            .read_to_end(&mut decoded)
            .map_err(|error| not_idx(format!("bad gzip stream: {error}")))?;
        raw = decoded;
        &raw[..]
    } else {
        bytes
    };
    if bytes.len() < 4 {
        return Err(not_idx(format!("only {} bytes", bytes.len())));
    }
    if bytes[0] != 0 || bytes[1] != 0 || bytes[2] != IDX_UNSIGNED_BYTE {
        return Err(not_idx(format!(
            "magic bytes {:02x} {:02x} {:02x}",
            bytes[0], bytes[1], bytes[2]
        )));
    }
    let found = usize::from(bytes[3]);
    if found != rank {
        return Err(DataError::WrongRank {
            source_name: source_name.to_string(),
            expected: rank,
            found,
        });
    }
    let header_len = 4 + 4 * rank;
    if bytes.len() < header_len {
        return Err(not_idx("header cut short".to_string()));
    }
    let dimensions: Vec<usize> = bytes[4..header_len]
        .chunks_exact(4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    let expected = dimensions
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| not_idx("dimensions overflow".to_string()))?;
    let data = &bytes[header_len..];
    if data.len() < expected {
        return Err(DataError::Truncated {
            source_name: source_name.to_string(),
            expected,
            found: data.len(),
        });
    }
    Ok((dimensions, data[..expected].to_vec()))
}

/// A permutation of `0..n` drawn with ChaCha8 seeded by `seed`: the same on every platform,
/// natively and in the browser.
pub fn seeded_permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    order
}

/// Splits `0..n` at random (seeded) into a first part of `round(n · first_fraction)` indices and
/// the rest; each part is sorted so it keeps the data's order.
pub fn seeded_split(n: usize, first_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let order = seeded_permutation(n, seed);
    let first_len = ((n as f64) * first_fraction.clamp(0.0, 1.0)).round() as usize;
    let mut first = order[..first_len].to_vec();
    let mut second = order[first_len..].to_vec();
    first.sort_unstable();
    second.sort_unstable();
    (first, second)
}

/// Mean, in `[0, 1]` pixel units, of the normal law behind [`NoiseKind::Gaussian`] before
/// clipping: centred grey.
pub const GAUSSIAN_NOISE_MEAN: f64 = 0.5;
/// Standard deviation of that law before clipping: one standard deviation reaches black and
/// white, so about a third of the pixels are clipped to 0 or 1.
pub const GAUSSIAN_NOISE_STD: f64 = 0.5;

/// The law of every pixel of a noise image, in `[0, 1]` units (serde: `"gaussian"`,
/// `"uniform"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseKind {
    /// `clip(N(0.5, 0.5²), 0, 1)`: mean 0.5, about 15.9% of the pixels black and 15.9% white.
    Gaussian,
    /// `U[0, 1]`: mean 0.5, standard deviation `1/√12 ≈ 0.289`.
    Uniform,
}

/// `count` images of independent noise pixels drawn from `kind`'s law with ChaCha8 seeded by
/// `seed`, each value `v ∈ [0, 1]` stored as the byte `round(255·v)` like the real images.
pub fn noise_images(kind: NoiseKind, count: usize, seed: u64) -> Images {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draw = || match kind {
        NoiseKind::Gaussian => {
            let standard: f64 = rng.sample(StandardNormal);
            (GAUSSIAN_NOISE_MEAN + GAUSSIAN_NOISE_STD * standard).clamp(0.0, 1.0)
        }
        NoiseKind::Uniform => rng.random::<f64>(),
    };
    // `v ∈ [0, 1]`, so the rounded byte lies in 0..=255 and the cast is exact.
    let pixels = (0..count.saturating_mul(IMAGE_PIXELS))
        .map(|_| (255.0 * draw()).round() as u8)
        .collect();
    Images { pixels }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn idx_bytes(dimensions: &[u32], data: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0, 0, IDX_UNSIGNED_BYTE, dimensions.len() as u8];
        for d in dimensions {
            bytes.extend_from_slice(&d.to_be_bytes());
        }
        bytes.extend_from_slice(data);
        bytes
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn reads_plain_and_gzipped_idx_alike() {
        let pixels: Vec<u8> = (0..2 * IMAGE_PIXELS).map(|i| (i % 251) as u8).collect();
        let plain = idx_bytes(&[2, 28, 28], &pixels);
        let images = parse_idx_images(&plain, "plain").unwrap();
        assert_eq!(images.len(), 2);
        assert_eq!(images.image(1)[0], (IMAGE_PIXELS % 251) as u8);
        assert_eq!(parse_idx_images(&gzip(&plain), "gz").unwrap(), images);
        let labels = parse_idx_labels(&gzip(&idx_bytes(&[3], &[7, 0, 9])), "labels").unwrap();
        assert_eq!(labels, vec![7, 0, 9]);
    }

    #[test]
    fn rejects_malformed_files_with_their_name() {
        let message = |e: DataError| e.to_string();
        let short = idx_bytes(&[2, 28, 28], &[0; 100]);
        let e = message(parse_idx_images(&short, "short.idx").unwrap_err());
        assert!(
            e.contains("short.idx") && e.contains("1568") && e.contains("100"),
            "{e}"
        );
        let e = message(parse_idx_images(&idx_bytes(&[1, 32, 32], &[0; 1024]), "big").unwrap_err());
        assert!(e.contains("32x32"), "{e}");
        let e = message(parse_idx_labels(&idx_bytes(&[1, 28, 28], &[]), "rank").unwrap_err());
        assert!(e.contains("expected 1 dimension"), "{e}");
        let e = message(parse_idx_labels(b"PK\x03\x04 zip", "zip").unwrap_err());
        assert!(e.contains("zip: not an IDX"), "{e}");
        let e = message(parse_idx_labels(&[0x1f, 0x8b, 1, 2, 3], "bad.gz").unwrap_err());
        assert!(e.contains("bad gzip"), "{e}");
    }

    #[test]
    fn missing_data_set_says_how_to_get_it() {
        let e = load_fashion_mnist(Path::new("/nonexistent"), FashionMnistPart::Train);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("apt-get install dataset-fashion-mnist"));
    }

    #[test]
    fn committed_assets_parse() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
        let test = load_fashion_mnist(&root.join("fashion-mnist"), FashionMnistPart::Test).unwrap();
        assert_eq!(test.len(), 10_000);
        assert_eq!(&test.labels[..5], &[9, 2, 1, 1, 6]);
        let ood = Dataset::load(
            &root.join("mnist-ood-images-idx3-ubyte.gz"),
            &root.join("mnist-ood-labels-idx1-ubyte.gz"),
        )
        .unwrap();
        assert_eq!(ood.len(), 2_000);
        assert_eq!(&ood.labels[..11], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
    }

    #[test]
    fn seeded_split_is_a_reproducible_partition() {
        let (a, b) = seeded_split(1_000, 0.5, 7);
        assert_eq!((a.len(), b.len()), (500, 500));
        let mut all: Vec<usize> = a.iter().chain(&b).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..1_000).collect::<Vec<_>>());
        assert_eq!(seeded_split(1_000, 0.5, 7), (a.clone(), b));
        assert_ne!(seeded_split(1_000, 0.5, 8).0, a);
    }

    /// Φ(1), the standard normal distribution function at 1 (certified value, e.g. Abramowitz &
    /// Stegun table 26.1, to 16 digits).
    const STANDARD_NORMAL_CDF_AT_1: f64 = 0.841_344_746_068_542_9;
    /// Pixels per moment check: 500 images.
    const NOISE_IMAGES: usize = 500;
    /// Tolerance on the sample mean and standard deviation of 392,000 pixels: the standard
    /// error of the mean is σ/√392000 ≤ 0.36/626 ≈ 5.8e-4, that of the standard deviation about
    /// the same, so 3e-3 is more than 5 standard errors. The quantisation to bytes adds at most
    /// 1/(12·255²) ≈ 1.3e-6 to the variance (Sheppard), far below it.
    const MOMENT_TOLERANCE: f64 = 3e-3;

    fn pixel_mean_and_std(images: &Images) -> (f64, f64) {
        let values: Vec<f64> = images
            .pixels()
            .iter()
            .map(|&p| f64::from(p) / 255.0)
            .collect();
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        (mean, variance.sqrt())
    }

    #[test]
    fn noise_is_reproducible_for_a_seed() {
        for kind in [NoiseKind::Gaussian, NoiseKind::Uniform] {
            let images = noise_images(kind, 3, 11);
            assert_eq!(images.len(), 3);
            assert_eq!(images, noise_images(kind, 3, 11));
            assert_ne!(images, noise_images(kind, 3, 12));
            // A longer draw starts with the same images.
            assert_eq!(noise_images(kind, 5, 11).select(&[0, 1, 2]), images);
        }
        assert!(noise_images(NoiseKind::Uniform, 0, 0).is_empty());
        assert_ne!(
            noise_images(NoiseKind::Gaussian, 1, 0),
            noise_images(NoiseKind::Uniform, 1, 0)
        );
        let kinds: Vec<NoiseKind> = serde_json::from_str(r#"["gaussian", "uniform"]"#).unwrap();
        assert_eq!(kinds, [NoiseKind::Gaussian, NoiseKind::Uniform]);
    }

    #[test]
    fn clipped_gaussian_noise_has_the_moments_of_its_law() {
        // X = clip(Y, 0, 1), Y ~ N(μ, σ²), a = (0 − μ)/σ, b = (1 − μ)/σ, φ and Φ the standard
        // normal density and distribution function. The atoms at 0 and 1 and the truncated
        // part ∫ (μ + σz)^j φ(z) dz over [a, b] give
        //   E[X]  = (1 − Φ(b)) + μ(Φ(b) − Φ(a)) + σ(φ(a) − φ(b)),
        //   E[X²] = (1 − Φ(b)) + (μ² + σ²)(Φ(b) − Φ(a)) + 2μσ(φ(a) − φ(b))
        //           + σ²(a·φ(a) − b·φ(b)).
        // Here a = −1 and b = 1, so Φ(a) = 1 − Φ(1).
        let (mu, sigma) = (GAUSSIAN_NOISE_MEAN, GAUSSIAN_NOISE_STD);
        let (a, b) = (-mu / sigma, (1.0 - mu) / sigma);
        assert_eq!((a, b), (-1.0, 1.0));
        let density = |z: f64| (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let (cdf_a, cdf_b) = (1.0 - STANDARD_NORMAL_CDF_AT_1, STANDARD_NORMAL_CDF_AT_1);
        let inside = cdf_b - cdf_a;
        let mean = (1.0 - cdf_b) + mu * inside + sigma * (density(a) - density(b));
        let second = (1.0 - cdf_b)
            + (mu * mu + sigma * sigma) * inside
            + 2.0 * mu * sigma * (density(a) - density(b))
            + sigma * sigma * (a * density(a) - b * density(b));
        let std = (second - mean * mean).sqrt();
        // The values by hand: 0.5 and sqrt(0.379015 − 0.25) ≈ 0.35919.
        assert!((mean - 0.5).abs() < 1e-15);
        assert!((std - 0.359_186).abs() < 1e-6, "{std}");

        let images = noise_images(NoiseKind::Gaussian, NOISE_IMAGES, 3);
        let (sample_mean, sample_std) = pixel_mean_and_std(&images);
        assert!(
            (sample_mean - mean).abs() < MOMENT_TOLERANCE,
            "{sample_mean}"
        );
        assert!((sample_std - std).abs() < MOMENT_TOLERANCE, "{sample_std}");
        // Each tail beyond one σ is clipped: 1 − Φ(1) ≈ 15.9% black and as many white.
        let share = |byte: u8| {
            images.pixels().iter().filter(|&&p| p == byte).count() as f64
                / images.pixels().len() as f64
        };
        for byte in [0, 255] {
            // The byte also collects the values within half a grey level of the edge.
            let expected = 1.0 - STANDARD_NORMAL_CDF_AT_1 + density(1.0) * 0.5 / 255.0 / sigma;
            assert!((share(byte) - expected).abs() < MOMENT_TOLERANCE, "{byte}");
        }
    }

    #[test]
    fn uniform_noise_has_the_moments_of_its_law() {
        let (sample_mean, sample_std) =
            pixel_mean_and_std(&noise_images(NoiseKind::Uniform, NOISE_IMAGES, 5));
        assert!(
            (sample_mean - 0.5).abs() < MOMENT_TOLERANCE,
            "{sample_mean}"
        );
        assert!(
            (sample_std - 1.0 / 12.0_f64.sqrt()).abs() < MOMENT_TOLERANCE,
            "{sample_std}"
        );
    }
}
