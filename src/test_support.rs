//! Helpers shared by the unit tests that build synthetic data whose truth is known.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// An index drawn with probability proportional to `weights` (non-negative, not all 0): the
/// label of a synthetic example drawn from its own probabilities.
pub fn draw_index(weights: &[f64], rng: &mut impl Rng) -> usize {
    let mut u = rng.random_range(0.0..weights.iter().sum::<f64>());
    weights
        .iter()
        .position(|w| {
            u -= w;
            u < 0.0
        })
        .unwrap_or(weights.len() - 1)
}

/// Probabilities of `n` rows of a calibrated classifier of `num_classes` classes: logits
/// `z_k = 2·N(0, 1) + 0.15·k`, `p = softmax(z)`, and each label drawn from `p`.
pub fn calibrated_rows(n: usize, num_classes: usize, rng: &mut impl Rng) -> (Vec<f64>, Vec<u32>) {
    let mut probabilities = Vec::with_capacity(n * num_classes);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let logits: Vec<f64> = (0..num_classes)
            .map(|class| {
                let noise: f64 = StandardNormal.sample(rng);
                2.0 * noise + 0.15 * class as f64
            })
            .collect();
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = logits.iter().map(|z| (z - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        labels.push(draw_index(&weights, rng) as u32);
        probabilities.extend(weights.iter().map(|w| w / total));
    }
    (probabilities, labels)
}

/// Logits of `n` rows of `num_classes` classes whose length varies tenfold (`z = s·N(0, 1)`, `s`
/// uniform in `[1, 10)`), each label drawn from `softmax(z/t)` with `t = temperature(‖z‖)`:
/// `|length| T·length` plants normalised temperature scaling's `T` (LogitNorm's form), `|_| T`
/// one temperature.
pub fn planted_rows(
    n: usize,
    num_classes: usize,
    rng: &mut impl Rng,
    temperature: impl Fn(f64) -> f64,
) -> (Vec<f32>, Vec<u32>) {
    let mut logits = Vec::with_capacity(n * num_classes);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let scale = rng.random_range(1.0..10.0);
        let row: Vec<f32> = (0..num_classes)
            .map(|_| (scale * rng.sample::<f64, _>(StandardNormal)) as f32)
            .collect();
        let length = row
            .iter()
            .map(|&z| f64::from(z).powi(2))
            .sum::<f64>()
            .sqrt();
        let t = temperature(length);
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let weights: Vec<f64> = row
            .iter()
            .map(|&z| (f64::from(z - max) / t).exp())
            .collect();
        labels.push(draw_index(&weights, rng) as u32);
        logits.extend(row);
    }
    (logits, labels)
}

/// `n` rows of `num_classes` logits whose top-label confidence `c` is uniform on `[0.3, 0.95]`
/// (a top logit `ln((K − 1)c/(1 − c))` for a class drawn at random, the others 0) and whose
/// label is the predicted class with probability `c − gap` (`c` as the `f32` logit gives it),
/// another class otherwise: every top-label calibration error of the population is `gap`.
pub fn planted_gap_rows(
    n: usize,
    num_classes: usize,
    gap: f64,
    rng: &mut impl Rng,
) -> (Vec<f32>, Vec<u32>) {
    let others = (num_classes - 1) as f64;
    let mut values = vec![0.0_f32; n * num_classes];
    let mut labels = Vec::with_capacity(n);
    for row in values.chunks_exact_mut(num_classes) {
        let predicted = rng.random_range(0..num_classes);
        let wanted: f64 = rng.random_range(0.3..0.95);
        let top = (others * wanted / (1.0 - wanted)).ln() as f32;
        row[predicted] = top;
        let confidence = f64::from(top).exp() / (f64::from(top).exp() + others);
        let right = rng.random::<f64>() < confidence - gap;
        let label = if right {
            predicted
        } else {
            (predicted + rng.random_range(1..num_classes)) % num_classes
        };
        labels.push(label as u32);
    }
    (values, labels)
}

/// `n` rows of `num_classes` logits `3·N(0, 1)` (rounded to `f32`) with labels drawn from
/// `softmax(z / true_temperature)`, from a ChaCha8 generator seeded with `seed`: the temperature
/// that calibrates them is `true_temperature` by construction.
pub fn planted_temperature_rows(
    n: usize,
    num_classes: usize,
    true_temperature: f64,
    seed: u64,
) -> (Vec<f32>, Vec<u32>) {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut logits = Vec::with_capacity(n * num_classes);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f32> = (0..num_classes)
            .map(|_| (3.0 * rng.sample::<f64, _>(StandardNormal)) as f32)
            .collect();
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &z| m.max(z));
        let weights: Vec<f64> = row
            .iter()
            .map(|&z| (f64::from(z - max) / true_temperature).exp())
            .collect();
        labels.push(draw_index(&weights, &mut rng) as u32);
        logits.extend(row);
    }
    (logits, labels)
}
