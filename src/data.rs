//! Image data: the IDX file format, Fashion-MNIST's classes, and seeded splits.
//!
//! IDX (LeCun et al., the MNIST distribution format) is a big-endian header — two zero bytes, a
//! type byte (`0x08` = unsigned byte), the number of dimensions, then each dimension as a `u32` —
//! followed by the values in row-major order. Files may be gzipped (as Debian's
//! `dataset-fashion-mnist` and the committed assets are); gzip is recognised by its magic bytes,
//! not by the file name.

use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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
    /// Wraps `n · 784` pixels; `None` when the length is not a whole number of images.
    pub fn from_pixels(pixels: Vec<u8>) -> Option<Self> {
        pixels
            .len()
            .is_multiple_of(IMAGE_PIXELS)
            .then_some(Self { pixels })
    }

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
}
