//! Image data: the IDX file format, Fashion-MNIST's classes, and seeded splits.
//!
//! IDX (LeCun et al., the MNIST distribution format) is a big-endian header — two zero bytes, a
//! type byte (`0x08` = unsigned byte), the number of dimensions, then each dimension as a `u32` —
//! followed by the values in row-major order. Files may be gzipped (as Debian's
//! `dataset-fashion-mnist` and the committed assets are); gzip is recognised by its magic bytes,
//! not by the file name. The page unzips in the browser and parses with the `parse_unzipped_*`
//! functions, so that its module carries no gzip decoder.
//!
//! Synthetic out-of-distribution images ([`noise_images`]) draw every pixel independently, in
//! `[0, 1]` units, from either `clip(N(0.5, 0.5²), 0, 1)` or `U[0, 1]`, and store it as the byte
//! `round(255·v)`, the quantisation of the real images (the network divides by 255 again). The
//! draws come from ChaCha8 seeded with the seed, image by image and pixel by pixel in row-major
//! order, so a seed gives the same images on every platform.

use std::borrow::Cow;
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

/// Fashion-MNIST's number of classes, which the bundled networks predict.
pub const NUM_CLASSES: usize = FASHION_MNIST_CLASSES.len();

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

/// [`FASHION_MNIST_CLASSES`] as owned names, as a [`crate::lab::Lab`] holds them.
pub fn fashion_mnist_class_names() -> Vec<String> {
    FASHION_MNIST_CLASSES.map(String::from).to_vec()
}

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
    #[error("{source_name}: holds {found} images, expected {expected}")]
    WrongImageCount {
        source_name: String,
        expected: usize,
        found: usize,
    },
    #[error(
        "{source_name}: unzips to more than {limit} bytes, the most an IDX file may hold here"
    )]
    TooLarge { source_name: String, limit: usize },
    #[error(
        "{source_name}: declares {count} images, more than the {most} an IDX file may hold here"
    )]
    TooManyImages {
        source_name: String,
        count: usize,
        most: usize,
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

/// Whole images of `pixels` (`[n, 28, 28]` row-major; a partial last image is left out) as an
/// uncompressed IDX images file, the format [`parse_idx_images`] reads.
pub fn idx_images_file(pixels: &[u8]) -> Vec<u8> {
    let count = pixels.len() / IMAGE_PIXELS;
    let mut bytes = vec![0, 0, 0x08, 3];
    for dimension in [count, IMAGE_SIDE, IMAGE_SIDE] {
        bytes.extend((dimension as u32).to_be_bytes());
    }
    bytes.extend_from_slice(&pixels[..count * IMAGE_PIXELS]);
    bytes
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
/// Not IDX, not rank 3, not 28×28, or shorter than its header says; a bad gzip stream, or one
/// that unzips to more than [`MAX_IDX_BYTES`].
pub fn parse_idx_images(bytes: &[u8], source_name: &str) -> Result<Images, DataError> {
    parse_unzipped_idx_images(&unzip_idx(bytes, source_name)?, source_name)
}

/// Parses IDX images that are not gzipped. The page unzips its files with the browser's
/// `DecompressionStream` and parses them with this, so that its module carries no gzip decoder.
///
/// # Errors
/// Not IDX, not rank 3, not 28×28, or shorter than its header says.
pub fn parse_unzipped_idx_images(bytes: &[u8], source_name: &str) -> Result<Images, DataError> {
    let (dimensions, data) = parse_unzipped_idx(bytes, source_name, 3)?;
    check_image_size(&dimensions, source_name)?;
    Ok(Images { pixels: data })
}

/// Bytes of an IDX images file's header: magic and three dimensions.
pub const IDX_IMAGES_HEADER: usize = 4 + 4 * 3;

/// The number of images an IDX images file declares, from its first [`IDX_IMAGES_HEADER`]
/// bytes (unzipped): the page reads the test images as they arrive, and places each pixel
/// from this count on.
///
/// # Errors
/// Not IDX, not rank 3, not 28×28, fewer bytes than the header, or more images than
/// [`MAX_IDX_BYTES`] holds (what a gzipped file may unzip to).
pub fn idx_image_count(header: &[u8], source_name: &str) -> Result<usize, DataError> {
    let dimensions = idx_dimensions(header, source_name, 3)?;
    check_image_size(&dimensions, source_name)?;
    let (count, most) = (dimensions[0], MAX_IDX_BYTES / IMAGE_PIXELS);
    if count > most {
        return Err(DataError::TooManyImages {
            source_name: source_name.to_string(),
            count,
            most,
        });
    }
    Ok(count)
}

/// Refuses images that are not [`IMAGE_SIDE`] × [`IMAGE_SIDE`].
fn check_image_size(dimensions: &[usize], source_name: &str) -> Result<(), DataError> {
    let (rows, cols) = (dimensions[1], dimensions[2]);
    if rows != IMAGE_SIDE || cols != IMAGE_SIDE {
        return Err(DataError::WrongImageSize {
            source_name: source_name.to_string(),
            rows,
            cols,
        });
    }
    Ok(())
}

/// Parses IDX labels, gzipped or not; `source_name` names the data in error messages.
///
/// # Errors
/// Not IDX, not rank 1, or shorter than its header says; a bad gzip stream, or one that
/// unzips to more than [`MAX_IDX_BYTES`].
pub fn parse_idx_labels(bytes: &[u8], source_name: &str) -> Result<Vec<u8>, DataError> {
    parse_unzipped_idx_labels(&unzip_idx(bytes, source_name)?, source_name)
}

/// Parses IDX labels that are not gzipped (see [`parse_unzipped_idx_images`]).
///
/// # Errors
/// Not IDX, not rank 1, or shorter than its header says.
pub fn parse_unzipped_idx_labels(bytes: &[u8], source_name: &str) -> Result<Vec<u8>, DataError> {
    parse_unzipped_idx(bytes, source_name, 1).map(|(_, data)| data)
}

/// Gzip's two magic bytes (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// IDX type byte for unsigned bytes.
const IDX_UNSIGNED_BYTE: u8 = 0x08;
/// The most bytes a gzipped IDX file may unzip to: over twice Fashion-MNIST's 60,000 training
/// images (47 MB), and a bound on what a small hostile file (a "gzip bomb") can make us allocate.
pub const MAX_IDX_BYTES: usize = 128 << 20;

/// `bytes` unzipped when they start with gzip's magic bytes, as they are otherwise.
fn unzip_idx<'a>(bytes: &'a [u8], source_name: &str) -> Result<Cow<'a, [u8]>, DataError> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut decoded = Vec::new();
    GzDecoder::new(bytes)
        .take(MAX_IDX_BYTES as u64 + 1)
        .read_to_end(&mut decoded)
        .map_err(|error| DataError::NotIdx {
            source_name: source_name.to_string(),
            detail: format!("bad gzip stream: {error}"),
        })?;
    if decoded.len() > MAX_IDX_BYTES {
        return Err(DataError::TooLarge {
            source_name: source_name.to_string(),
            limit: MAX_IDX_BYTES,
        });
    }
    Ok(Cow::Owned(decoded))
}

/// The dimensions and data of an unzipped IDX file of `rank` unsigned-byte dimensions.
fn parse_unzipped_idx(
    bytes: &[u8],
    source_name: &str,
    rank: usize,
) -> Result<(Vec<usize>, Vec<u8>), DataError> {
    let not_idx = |detail: String| DataError::NotIdx {
        source_name: source_name.to_string(),
        detail,
    };
    let dimensions = idx_dimensions(bytes, source_name, rank)?;
    let expected = dimensions
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| not_idx("dimensions overflow".to_string()))?;
    let header_len = 4 + 4 * rank;
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

/// The dimensions in an IDX header of `rank` unsigned-byte dimensions at the start of `bytes`
/// (unzipped).
fn idx_dimensions(bytes: &[u8], source_name: &str, rank: usize) -> Result<Vec<usize>, DataError> {
    let not_idx = |detail: String| DataError::NotIdx {
        source_name: source_name.to_string(),
        detail,
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
    Ok(dimensions)
}

/// A permutation of `0..n` drawn with ChaCha8 seeded by `seed`: the same on every platform,
/// natively and in the browser.
pub fn seeded_permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    order
}

/// Share of the rows a [`seeded_split`] puts in the calibration part: halves, on the page
/// and by default in the CLI.
pub const CALIBRATION_FRACTION: f64 = 0.5;
/// The seed of the split a first visit and the CLI use.
pub const DEFAULT_SPLIT_SEED: u32 = 0;

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
#[path = "data_tests.rs"]
mod tests;
