//! The corruptions against hand-computed cases and scipy.ndimage's rotation and blur
//! (`scripts/shift-reference.py`).

use super::*;

/// calibra and scipy quantise the same f64 value; the two computations may differ in the last
/// bits, which can move a value sitting on a rounding half by one byte.
const BYTE_TOLERANCE: i32 = 1;

/// One image of zeros with `value` at `(x, y)`.
fn dot(x: usize, y: usize, value: u8) -> Vec<u8> {
    let mut image = vec![0; IMAGE_PIXELS];
    image[y * IMAGE_SIDE + x] = value;
    image
}

fn bytes(values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .map(|v| (255.0 * v.clamp(0.0, 1.0)).round() as u8)
        .collect()
}

fn unit(image: &[u8]) -> Vec<f64> {
    image.iter().map(|&b| f64::from(b) / 255.0).collect()
}

fn assert_within_a_byte(actual: &[u8], expected: &[u8], what: &str) {
    assert_eq!(actual.len(), expected.len());
    for (index, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (i32::from(a) - i32::from(e)).abs() <= BYTE_TOLERANCE,
            "{what}: pixel {index} is {a}, scipy's {e}"
        );
    }
}

#[test]
fn severity_zero_is_the_images_and_bad_input_is_refused() {
    let images: Vec<u8> = (0..3 * IMAGE_PIXELS).map(|i| (i % 251) as u8).collect();
    for corruption in Corruption::ALL {
        assert_eq!(corrupt(&images, corruption, 0, 1).unwrap(), images);
        assert_eq!(
            corrupt(&images, corruption, corruption.max_severity() + 1, 1),
            Err(ShiftError::SeverityOutOfRange {
                corruption,
                severity: corruption.max_severity() + 1,
                max: corruption.max_severity(),
            })
        );
    }
    let error = corrupt(&images[..100], Corruption::Blur, 1, 1).unwrap_err();
    assert_eq!(
        error.to_string(),
        "100 bytes are not a whole number of 28×28 images"
    );
    assert_eq!(
        corrupt_rows(&images, &[3], Corruption::Noise, 1, 1),
        Err(ShiftError::NoSuchRow { row: 3, images: 3 })
    );
}

#[test]
fn inversion_and_contrast_by_hand() {
    let image: Vec<u8> = (0..IMAGE_PIXELS).map(|i| [0, 51, 255][i % 3]).collect();
    let inverted = corrupt(&image, Corruption::Inversion, 1, 0).unwrap();
    assert!(image.iter().zip(&inverted).all(|(&v, &w)| w == 255 - v));
    // Half the pixels 0 and half 255: mean 1/2; at severity 1 (c = 0.6) they become
    // 0.5 ∓ 0.6·0.5 = 0.2 and 0.8, bytes 51 and 204.
    let halves: Vec<u8> = (0..IMAGE_PIXELS)
        .map(|i| if i < IMAGE_PIXELS / 2 { 0 } else { 255 })
        .collect();
    let faded = corrupt(&halves, Corruption::Contrast, 1, 0).unwrap();
    assert_eq!((faded[0], faded[IMAGE_PIXELS - 1]), (51, 204));
    // At severity 5 (c = 0.1): 0.45 and 0.55, bytes 114.75 → 115 and 140.25 → 140.
    let faded = corrupt(&halves, Corruption::Contrast, 5, 0).unwrap();
    assert_eq!((faded[0], faded[IMAGE_PIXELS - 1]), (115, 140));
}

#[test]
fn translation_moves_a_dot_by_the_drawn_direction_and_pushes_it_off_the_edge() {
    let seed = 11;
    for severity in 1..=MAX_SEVERITY {
        // The direction of image 0 as `corrupt_rows` draws it: stream 0.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0);
        let theta = std::f64::consts::TAU * rng.random::<f64>();
        let length = f64::from(severity);
        let (dx, dy) = (
            (length * theta.cos()).round() as i64,
            (length * theta.sin()).round() as i64,
        );
        let moved = corrupt(&dot(14, 14, 200), Corruption::Translation, severity, seed).unwrap();
        let (x, y) = ((14 + dx) as usize, (14 + dy) as usize);
        assert_eq!(moved, dot(x, y, 200), "severity {severity}: ({dx}, {dy})");
    }
    // A dot in the corner stays only if it moves right and down; any other way it leaves black.
    let gone = corrupt(&dot(0, 0, 200), Corruption::Translation, 5, seed).unwrap();
    let moved_within = gone.iter().any(|&v| v != 0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(0);
    let theta = std::f64::consts::TAU * rng.random::<f64>();
    let (dx, dy) = ((5.0 * theta.cos()).round(), (5.0 * theta.sin()).round());
    assert_eq!(moved_within, dx >= 0.0 && dy >= 0.0);
}

#[test]
fn a_blurred_dot_is_the_outer_product_of_the_normalised_gaussian() {
    // σ = 0.5 (severity 1): radius ⌊1.5 + ½⌋ = 2, weights ∝ exp(−d²/(2·0.25)) = exp(−2d²).
    let raw: Vec<f64> = (-2..=2_i32)
        .map(|d| (-2.0 * f64::from(d * d)).exp())
        .collect();
    let total: f64 = raw.iter().sum();
    let weights: Vec<f64> = raw.iter().map(|w| w / total).collect();
    let blurred = corrupt(&dot(10, 12, 255), Corruption::Blur, 1, 0).unwrap();
    for y in 0..IMAGE_SIDE {
        for x in 0..IMAGE_SIDE {
            let (dx, dy) = (x as i64 - 10, y as i64 - 12);
            let expected = if dx.abs() <= 2 && dy.abs() <= 2 {
                (255.0 * weights[(dx + 2) as usize] * weights[(dy + 2) as usize]).round() as u8
            } else {
                0
            };
            assert_eq!(blurred[y * IMAGE_SIDE + x], expected, "({x}, {y})");
        }
    }
}

#[test]
fn rotation_and_blur_equal_scipy_ndimage() {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../tests/fixtures/shift/expected.json")).unwrap();
    let as_bytes = |value: &serde_json::Value| -> Vec<u8> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u8)
            .collect()
    };
    let image = unit(&as_bytes(&fixture["image"]));
    for case in fixture["rotations"].as_array().unwrap() {
        let degrees = case["degrees"].as_f64().unwrap();
        let ours = bytes(&rotate(&image, degrees));
        assert_within_a_byte(
            &ours,
            &as_bytes(&case["pixels"]),
            &format!("rotation by {degrees}°"),
        );
    }
    for case in fixture["blurs"].as_array().unwrap() {
        let sigma = case["sigma"].as_f64().unwrap();
        let ours = bytes(&blur(&image, sigma));
        assert_within_a_byte(
            &ours,
            &as_bytes(&case["pixels"]),
            &format!("blur of σ = {sigma}"),
        );
    }
}

#[test]
fn rotation_turns_by_plus_or_minus_the_severitys_angle() {
    // A quarter turn moves a dot exactly (no interpolation): the direction of the turn. Then a
    // severity-2 image is one of the two ±12° turns.
    let quarter = bytes(&rotate(&unit(&dot(20, 13, 255)), 90.0));
    let landed = quarter.iter().position(|&v| v == 255).unwrap();
    // scipy's convention (the fixture above): (x, y) = (20, 13) goes to (13, 7).
    assert_eq!((landed % IMAGE_SIDE, landed / IMAGE_SIDE), (13, 7));
    let image = dot(20, 13, 255);
    let turned = corrupt(&image, Corruption::Rotation, 2, 4).unwrap();
    let plus = bytes(&rotate(&unit(&image), 12.0));
    let minus = bytes(&rotate(&unit(&image), -12.0));
    assert!(turned == plus || turned == minus);
}

#[test]
fn noise_has_the_severitys_spread_and_the_seed_decides_it() {
    let grey = vec![128_u8; 200 * IMAGE_PIXELS];
    for severity in [1, 3] {
        let noisy = corrupt(&grey, Corruption::Noise, severity, 5).unwrap();
        assert_eq!(
            noisy,
            corrupt(&grey, Corruption::Noise, severity, 5).unwrap()
        );
        assert_ne!(
            noisy,
            corrupt(&grey, Corruption::Noise, severity, 6).unwrap()
        );
        let deltas: Vec<f64> = noisy
            .iter()
            .map(|&v| (f64::from(v) - 128.0) / 255.0)
            .collect();
        let mean = deltas.iter().sum::<f64>() / deltas.len() as f64;
        let sd =
            (deltas.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / deltas.len() as f64).sqrt();
        let sigma = 0.08 * f64::from(severity);
        // 156,800 draws: the sample's sd is within 1% of σ; clipping at 0 and 1 (4.6 σ away at
        // severity 1, 1.5 σ at severity 3) trims a little, so allow 5% below.
        assert!(
            sd < 1.01 * sigma && sd > 0.95 * sigma,
            "severity {severity}: sd {sd}"
        );
        assert!(mean.abs() < 0.01, "severity {severity}: mean {mean}");
    }
}

#[test]
fn an_image_alone_or_a_part_is_corrupted_as_in_the_whole_set() {
    let images: Vec<u8> = (0..20 * IMAGE_PIXELS)
        .map(|i| ((i * 7) % 256) as u8)
        .collect();
    for corruption in Corruption::ALL {
        let all = corrupt(&images, corruption, 1, 9).unwrap();
        let some = corrupt_rows(&images, &[17, 3], corruption, 1, 9).unwrap();
        assert_eq!(
            some[..IMAGE_PIXELS],
            all[17 * IMAGE_PIXELS..18 * IMAGE_PIXELS]
        );
        assert_eq!(
            some[IMAGE_PIXELS..],
            all[3 * IMAGE_PIXELS..4 * IMAGE_PIXELS]
        );
        // A part at a time, as the page makes a copy between frames.
        let parts: Vec<u8> = [(0, 7), (7, 20)]
            .iter()
            .flat_map(|&(first, end)| {
                let part = &images[first * IMAGE_PIXELS..end * IMAGE_PIXELS];
                corrupt_from(part, first, corruption, 1, 9).unwrap()
            })
            .collect();
        assert_eq!(parts, all);
    }
}

#[test]
fn parameters_read_as_the_page_writes_them() {
    assert_eq!(Corruption::Rotation.parameter(3), "±18°");
    assert_eq!(Corruption::Blur.parameter(2), "σ = 1.0 px");
    assert_eq!(Corruption::Noise.parameter(2), "σ = 0.16");
    assert_eq!(Corruption::Contrast.parameter(3), "contrast × 0.30");
    assert_eq!(Corruption::Translation.parameter(5), "5 px");
    assert_eq!(Corruption::Inversion.parameter(1), "inverted");
    assert_eq!(Corruption::Noise.parameter(0), "none");
}
