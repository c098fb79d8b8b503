//! Unit tests of `data.rs`: IDX files plain and gzipped, malformed files refused by name, seeded
//! splits and the moments of the noise laws.

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
    // The page's parsers read what the browser unzipped, and refuse gzip by its magic bytes.
    assert_eq!(parse_unzipped_idx_images(&plain, "plain").unwrap(), images);
    let refused = parse_unzipped_idx_labels(&gzip(&idx_bytes(&[3], &[7, 0, 9])), "l.gz");
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("magic bytes 1f 8b 08"),
        "gzip is not unzipped"
    );
}

#[test]
fn written_idx_images_are_the_bytes_read_back() {
    let pixels: Vec<u8> = (0..2 * IMAGE_PIXELS).map(|i| (i % 253) as u8).collect();
    // The header by hand: 0, 0, unsigned byte, 3 dimensions, then 2, 28, 28 big-endian.
    let file = idx_images_file(&pixels);
    assert_eq!(
        file[..16],
        [0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 28, 0, 0, 0, 28]
    );
    assert_eq!(file, idx_bytes(&[2, 28, 28], &pixels));
    assert_eq!(
        parse_idx_images(&file, "written").unwrap().pixels(),
        &pixels[..]
    );
    // A partial last image is left out.
    assert_eq!(
        idx_images_file(&pixels[..IMAGE_PIXELS + 5]),
        idx_bytes(&[1, 28, 28], &pixels[..IMAGE_PIXELS])
    );
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
fn the_image_count_comes_from_the_header_alone_and_is_checked_like_the_file() {
    let message = |e: DataError| e.to_string();
    // The header by hand: 0, 0, unsigned byte, 3 dimensions, then 10,000, 28, 28 big-endian.
    let header = [0, 0, 8, 3, 0, 0, 0x27, 0x10, 0, 0, 0, 28, 0, 0, 0, 28];
    assert_eq!(IDX_IMAGES_HEADER, header.len());
    assert_eq!(idx_image_count(&header, "t10k").unwrap(), 10_000);
    let e = message(idx_image_count(&header[..15], "cut").unwrap_err());
    assert!(
        e.contains("cut: not an IDX") && e.contains("header cut short"),
        "{e}"
    );
    let e = message(idx_image_count(&idx_bytes(&[1, 32, 32], &[]), "big").unwrap_err());
    assert!(e.contains("32x32"), "{e}");
    let e = message(idx_image_count(&idx_bytes(&[1, 28], &[0; 4]), "rank").unwrap_err());
    assert!(e.contains("expected 3 dimension(s), found 2"), "{e}");
    // As many images as MAX_IDX_BYTES holds, and one more.
    let most = (MAX_IDX_BYTES / IMAGE_PIXELS) as u32;
    assert_eq!(
        idx_image_count(&idx_bytes(&[most, 28, 28], &[]), "most").unwrap(),
        most as usize
    );
    let e = message(idx_image_count(&idx_bytes(&[most + 1, 28, 28], &[]), "huge").unwrap_err());
    assert_eq!(
        e,
        format!(
            "huge: declares {} images, more than the {most} an IDX file may hold here",
            most + 1
        )
    );
}

#[test]
fn a_gzip_bomb_is_refused_after_the_limit_not_unzipped_whole() {
    // 128 MiB of zeros and a header that asks for them all: about 600 KB gzipped.
    let bomb = gzip(&idx_bytes(&[MAX_IDX_BYTES as u32], &vec![0; MAX_IDX_BYTES]));
    assert!(bomb.len() < MAX_IDX_BYTES / 100, "{} bytes", bomb.len());
    let e = parse_idx_labels(&bomb, "bomb.gz").unwrap_err().to_string();
    assert_eq!(
        e,
        format!("bomb.gz: unzips to more than {MAX_IDX_BYTES} bytes, the most an IDX file may hold here")
    );
    // A file within the limit is read.
    let labels = parse_idx_labels(&gzip(&idx_bytes(&[1000], &[4; 1000])), "ok.gz").unwrap();
    assert_eq!(labels, vec![4; 1000]);
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

/// The committed test set is Debian's `dataset-fashion-mnist` files gzipped again
/// (`scripts/recompress-test-images.mjs`): unzipped, the very bytes of Debian's, whose SHA-256
/// is `zcat /usr/share/datasets/fashion-mnist/t10k-…-ubyte.gz | sha256sum`.
#[test]
fn committed_test_set_unzips_to_debians_bytes() {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fashion-mnist");
    for (name, debian_sha256) in [
        (
            "t10k-images-idx3-ubyte.gz",
            "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        ),
        (
            "t10k-labels-idx1-ubyte.gz",
            "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        ),
    ] {
        let mut idx = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(root.join(name)).unwrap())
            .read_to_end(&mut idx)
            .unwrap();
        assert_eq!(
            format!("{:x}", Sha256::digest(&idx)),
            debian_sha256,
            "{name}"
        );
    }
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
        images.pixels().iter().filter(|&&p| p == byte).count() as f64 / images.pixels().len() as f64
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
