//! The section's readouts against the lab and the OOD module computed directly.

use super::*;
use crate::page::state::Network;

const ROWS: usize = 300;
const K: usize = 10;

/// Row i favours class i mod 10 by 2 (every third row the next class), the rest small.
fn row_logits(i: usize) -> Vec<f32> {
    let favoured = if i.is_multiple_of(3) {
        (i + 1) % K
    } else {
        i % K
    };
    (0..K)
        .map(|k| if k == favoured { 2.0 } else { k as f32 * 0.01 })
        .collect()
}

fn lab() -> Lab {
    let labels: Vec<u32> = (0..ROWS).map(|i| (i % K) as u32).collect();
    let mut lab = Lab::new(labels, K, MODELS.len()).unwrap();
    let logits: Vec<f32> = (0..ROWS).flat_map(row_logits).collect();
    lab.add_logits(0, 0, &logits).unwrap();
    lab
}

fn image() -> OwnImage {
    // Test image 7 is all 7s; the reader's image all 8s: its nearest test image.
    let test_pixels: Vec<u8> = (0..ROWS)
        .flat_map(|i| vec![i.min(255) as u8; 784])
        .collect();
    let prepared = Prepared {
        pixels: vec![8; 784],
        inverted: true,
        choice: crate::own_image::Invert::Auto,
    };
    OwnImage::new(prepared, &test_pixels, MODELS.len()).unwrap()
}

/// The section's answer on `image`, with fresh thresholds.
fn answer(
    lab: &mut Lab,
    state: &PageState,
    image: &OwnImage,
    digits: Option<&[f32]>,
) -> (Vec<Patch>, OwnImageReadouts) {
    render(lab, &mut OodThresholds::default(), state, image, digits).unwrap()
}

fn metric(patches: &[Patch], name: &str) -> (f64, String) {
    patches
        .iter()
        .find_map(|p| match p {
            Patch::Rows { rows, .. } => rows.iter().flat_map(|r| &r.cells).find_map(|c| {
                (c.metric.as_deref() == Some(name)).then(|| (c.value.unwrap(), c.text.clone()))
            }),
            Patch::Bars { rows, .. } => rows
                .iter()
                .flat_map(|r| &r.bars)
                .find_map(|b| (b.metric == name).then(|| (b.value.unwrap(), b.text.clone()))),
            Patch::Metric {
                metric,
                value,
                text,
                ..
            } if metric == name => Some((value.unwrap(), text.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no readout {name}"))
}

fn text<'a>(patches: &'a [Patch], wanted: &str) -> &'a str {
    patches
        .iter()
        .find_map(|p| match p {
            Patch::Text { id, text } if *id == wanted => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no text #{wanted}"))
}

#[test]
fn the_networks_on_the_page_are_asked_for_and_the_nearest_images_named() {
    let (mut lab, mut image) = (lab(), image());
    let state = PageState::default();
    let (patches, readouts) = answer(&mut lab, &state, &image, None);
    // Only cross-entropy has all its test logits: it is the one asked for.
    assert_eq!(readouts.needs, vec![Network::Ce.index().unwrap()]);
    let rows: Vec<usize> = readouts.neighbours.iter().map(|n| n.row).collect();
    assert_eq!(rows, vec![8, 7, 9, 6, 10]);
    // Test image 8 is a Bag (8 mod 10), at distance 0; image 7 at √784 = 28.
    assert_eq!(readouts.neighbours[0].caption, "Bag · distance 0");
    assert_eq!(readouts.neighbours[1].caption, "Sneaker · distance 28");
    assert!(text(&patches, "own-sentence").starts_with("Waiting"));
    assert_eq!(
        metric(&patches, "own_inverted"),
        (1.0, "negated, since its border is light".to_string())
    );
    image.add_logits(0, &row_logits(3)).unwrap();
    let (_, readouts) = answer(&mut lab, &state, &image, None);
    assert!(readouts.needs.is_empty());
}

#[test]
fn a_networks_answer_is_the_softmax_the_set_and_the_ood_threshold() {
    let (mut lab, mut image) = (lab(), image());
    let state = PageState::default();
    let logits = row_logits(3); // favours class 4 (Coat)
    image.add_logits(0, &logits).unwrap();
    let (patches, _) = answer(&mut lab, &state, &image, None);
    // Probabilities by hand: exp(z_k / T) over their sum.
    let softmax = |t: f64| {
        let e: Vec<f64> = logits.iter().map(|&z| (f64::from(z) / t).exp()).collect();
        let total: f64 = e.iter().sum();
        e.into_iter().map(|v| v / total).collect::<Vec<_>>()
    };
    let (raw, scaled) = (softmax(1.0), softmax(state.t));
    assert_eq!(metric(&patches, "own_top_ce"), (4.0, "Coat".to_string()));
    assert!((metric(&patches, "own_p_raw_ce").0 - raw[4]).abs() < 1e-12);
    assert!((metric(&patches, "own_p_t_ce").0 - scaled[4]).abs() < 1e-12);
    for k in 0..K {
        assert!((metric(&patches, &format!("own_probability_raw_{k}")).0 - raw[k]).abs() < 1e-12);
        assert!((metric(&patches, &format!("own_probability_t_{k}")).0 - scaled[k]).abs() < 1e-12);
    }
    // The set is the lab's for these logits.
    let set = lab
        .own_image_set(0, &state.conformal_settings(), &logits)
        .unwrap();
    assert_eq!(metric(&patches, "own_set_ce").0, set.labels.len() as f64);
    // Energy at T over every test row: the ⌈0.95·300⌉ = 285th largest is the threshold.
    let energy = |row: &[f32]| {
        let t = state.t;
        t * row
            .iter()
            .map(|&z| (f64::from(z) / t).exp())
            .sum::<f64>()
            .ln()
    };
    let mut test_scores: Vec<f64> = (0..ROWS).map(|i| energy(&row_logits(i))).collect();
    test_scores.sort_by(|a, b| b.total_cmp(a));
    let threshold = test_scores[284];
    assert!((metric(&patches, "own_ood_threshold_ce").0 - threshold).abs() < 1e-9);
    let own = energy(&logits);
    assert!((metric(&patches, "own_ood_score_ce").0 - own).abs() < 1e-9);
    let passes = own >= threshold;
    assert_eq!(
        metric(&patches, "own_ood_in_ce").0,
        f64::from(u8::from(passes))
    );
    // The p-value against the calibration half's energies: one plus those at or below, over
    // their count plus one.
    let calibration: Vec<f64> = (0..ROWS)
        .filter(|&i| lab.calibration_flags()[i])
        .map(|i| energy(&row_logits(i)))
        .collect();
    let at_or_below = calibration.iter().filter(|&&c| c <= own).count();
    let pvalue = (1 + at_or_below) as f64 / (calibration.len() + 1) as f64;
    assert_eq!(metric(&patches, "own_ood_pvalue_ce").0, pvalue);
    let sentence = text(&patches, "own-sentence");
    assert!(
        sentence.contains(&format!("Its conformal p-value is {pvalue:.4}: ")),
        "{sentence}"
    );
    assert!(sentence.starts_with("The cross-entropy network takes your image for a Coat"));
    assert_eq!(
        sentence.contains("passes for a Fashion-MNIST image"),
        passes
    );
    assert_eq!(
        sentence.contains("is flagged as out-of-distribution"),
        !passes
    );
    assert!(
        sentence.contains("the LogitNorm lab measures once it has run"),
        "{sentence}"
    );
    // With the network's logits on the digits, the sentence says how many pass the same level:
    // here 4 digits, of which the first (all logits 5: energy far above the threshold) passes
    // and the other three (all −5) do not.
    let digits: Vec<f32> = [5.0_f32, -5.0, -5.0, -5.0]
        .iter()
        .flat_map(|&z| vec![z; K])
        .collect();
    let digit_energy = |z: f32| energy(&[z; K]);
    assert!(digit_energy(5.0) >= threshold && digit_energy(-5.0) < threshold);
    let (patches, _) = answer(&mut lab, &state, &image, Some(&digits));
    let sentence = text(&patches, "own-sentence");
    assert!(
        sentence.contains("at this level, 25.0% of the MNIST digits pass for Fashion-MNIST too"),
        "{sentence}"
    );
}

#[test]
fn bad_logits_are_refused() {
    let mut image = image();
    assert_eq!(
        image.add_logits(0, &[1.0; 9]),
        Err(OwnImageViewError::BadLogits {
            expected: 10,
            found: 9
        })
    );
    let mut nan = row_logits(0);
    nan[2] = f32::NAN;
    assert!(image.add_logits(0, &nan).is_err());
    assert_eq!(
        image.add_logits(MODELS.len(), &row_logits(0)),
        Err(OwnImageViewError::UnknownModel(MODELS.len()))
    );
    assert_eq!(image.idx_file().len(), 16 + 784);
}
