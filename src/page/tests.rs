//! One frame on a synthetic lab: the readouts carry the lab's own numbers, formatted once.

use super::*;
use crate::calibration::Binning;
use crate::lab::{ConformalParts, ShiftStore, TemperatureComparison, TemperatureParts};
use crate::sentences::percent;
use crate::temperature_anatomy::FitMistake;

fn lab_with_logits(rows: usize, arrived: usize) -> Lab {
    let labels: Vec<u32> = (0..rows).map(|i| (i % NUM_CLASSES) as u32).collect();
    let mut lab = Lab::new(labels, NUM_CLASSES, MODELS.len())
        .and_then(|lab| lab.with_class_names(crate::data::fashion_mnist_class_names()))
        .unwrap();
    // Row i favours its own label by 2 (every third row another one), so accuracy is 2/3.
    let logits: Vec<f32> = (0..arrived)
        .flat_map(|i| {
            let favoured = if i % 3 == 0 {
                (i + 1) % NUM_CLASSES
            } else {
                i % NUM_CLASSES
            };
            (0..NUM_CLASSES).map(move |k| {
                if k == favoured {
                    2.0
                } else {
                    (k as f32) * 0.01
                }
            })
        })
        .collect();
    if arrived > 0 {
        lab.add_logits(0, 0, &logits).unwrap();
    }
    lab
}

/// An OOD store with two tiny OOD sets.
fn store() -> OodStore {
    OodStore::new(NUM_CLASSES, MODELS.len(), 300, [3, 3, 3])
}

fn metric_patch<'a>(patches: &'a [Patch], name: &str) -> (&'a Option<f64>, &'a String) {
    patches
        .iter()
        .find_map(|p| match p {
            Patch::Metric {
                metric,
                value,
                text,
                ..
            } if metric == name => Some((value, text)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no readout {name}"))
}

fn text_patch<'a>(patches: &'a [Patch], id: &str) -> &'a str {
    patches
        .iter()
        .find_map(|p| match p {
            Patch::Text { id: i, text } if *i == id => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no text #{id}"))
}

/// The first three labs on screen with every block of readouts.
fn all() -> Visible {
    Visible {
        temperature: true,
        conformal: true,
        gallery: true,
        explain: Some(1),
        blocks: BLOCKS.iter().map(|block| block.id).collect(),
        ..Visible::default()
    }
}

#[test]
fn before_any_logits_the_frame_waits_and_still_shows_the_controls() {
    let mut lab = lab_with_logits(200, 0);
    let frame = render_bundled(&mut lab, &PageState::default(), &all()).unwrap();
    assert!(frame.readouts.waiting);
    assert!(frame.readouts.drawn.is_empty());
    assert_eq!(frame.readouts.fitted_temperature, None);
    assert_eq!(
        frame.readouts.patches,
        control_patches(&PageState::default())
    );
    assert_eq!(text_patch(&frame.readouts.patches, "alpha-value"), "0.10");
    assert_eq!(text_patch(&frame.readouts.patches, "target-value"), "90%");
}

#[test]
fn the_estimators_table_shows_its_errors_intervals_once_the_worker_has_them() {
    let mut lab = lab_with_logits(300, 300);
    let state = PageState {
        t: 1.5,
        ..PageState::default()
    };
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    for end in ["ece_debiased_lo", "top_label_ece_hi", "ks_error_lo"] {
        assert_eq!(
            metric_patch(&frame.readouts.patches, end),
            (&None, &"…".to_string())
        );
    }
    let view = lab
        .temperature_view(1.5, state.bins, state.binning, TemperatureParts::all(true))
        .unwrap();
    let request = view.interval_requests[0];
    assert_eq!(request.temperature, 1.5);
    let answer = lab.worker_halves().unwrap().intervals(&request).unwrap();
    lab.add_intervals(request, answer);
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    let patches = &frame.readouts.patches;
    for (name, interval) in [
        ("ece_debiased", answer.ece_debiased),
        ("top_label_ece", answer.top_label_ece),
        ("ks_error", answer.ks_error),
    ] {
        assert_eq!(metric_patch(patches, name).0, &Some(interval.estimate));
        for (end, value) in [("lo", interval.lower), ("hi", interval.upper)] {
            assert_eq!(
                metric_patch(patches, &format!("{name}_{end}")),
                (&Some(value), &format!("{value:.4}"))
            );
        }
    }
}

#[test]
fn a_frame_applies_the_split_and_model_and_reports_the_labs_numbers() {
    let mut lab = lab_with_logits(300, 300);
    let state = PageState {
        t: 1.5,
        split: 4,
        bins: 10,
        binning: Binning::Mass,
        ..PageState::default()
    };
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    assert_eq!(lab.split_seed(), 4);
    assert_eq!(frame.readouts.drawn, ["temperature", "conformal"]);
    assert_eq!(frame.readouts.arrived, 300);
    let view = lab
        .temperature_view(1.5, 10, Binning::Mass, TemperatureParts::all(true))
        .unwrap();
    let patches = &frame.readouts.patches;
    let (value, text) = metric_patch(patches, "accuracy");
    assert_eq!(*value, Some(view.at_temperature.accuracy));
    assert_eq!(*text, percent(view.at_temperature.accuracy, 2));
    assert_eq!(
        metric_patch(patches, "ece_fitted").0,
        &Some(view.at_fitted.ece)
    );
    assert_eq!(metric_patch(patches, "nll_t1").0, &Some(view.at_one.nll));
    assert_eq!(
        frame.readouts.fitted_temperature,
        Some(view.fitted_temperature)
    );
    let conformal = lab
        .conformal_view(&state.conformal_settings(), ConformalParts::ALL)
        .unwrap();
    assert_eq!(
        metric_patch(patches, "coverage").0,
        &Some(conformal.metrics.coverage)
    );
    assert_eq!(
        text_patch(patches, "conformal-sizes"),
        format!(
            "{} images; q̂ from {} calibration images",
            conformal.n_evaluation, conformal.n_calibration
        )
    );
    let explanation = frame.readouts.explanation.unwrap();
    assert_eq!(explanation.row, 1);
    assert!(explanation.title.starts_with("Image #1 ("));
    // A new model index with no logits: the frame waits again.
    let logitnorm = PageState {
        model: ModelKey::Logitnorm,
        ..state
    };
    assert!(
        render_bundled(&mut lab, &logitnorm, &all())
            .unwrap()
            .readouts
            .waiting
    );
}

#[test]
fn a_frame_is_complete_once_every_row_of_the_shown_network_is_in() {
    let state = PageState::default();
    let mut partial = lab_with_logits(300, 120);
    let frame = render_bundled(&mut partial, &state, &all()).unwrap();
    assert_eq!(frame.readouts.drawn, ["temperature", "conformal"]);
    assert!(!frame.readouts.complete, "120 of 300 rows");
    let mut whole = lab_with_logits(300, 300);
    assert!(
        render_bundled(&mut whole, &state, &all())
            .unwrap()
            .readouts
            .complete
    );
    // Another network, none of whose rows are in.
    let logitnorm = PageState {
        model: ModelKey::Logitnorm,
        ..state
    };
    assert!(
        !render_bundled(&mut whole, &logitnorm, &all())
            .unwrap()
            .readouts
            .complete
    );
}

#[test]
fn only_the_labs_on_screen_are_computed() {
    let mut lab = lab_with_logits(300, 300);
    let visible = Visible {
        temperature: false,
        conformal: true,
        gallery: false,
        ood: false,
        shift: false,
        own_image: false,
        explain: None,
        figures: Vec::new(),
        blocks: Vec::new(),
    };
    let frame = render_bundled(&mut lab, &PageState::default(), &visible).unwrap();
    assert_eq!(frame.readouts.drawn, ["conformal"]);
    assert!(frame.temperature.is_none() && frame.conformal.is_some());
    assert!(frame.readouts.gallery.is_none() && frame.readouts.explanation.is_none());
}

#[test]
fn the_gallery_line_counts_its_images() {
    let mut lab = lab_with_logits(300, 300);
    let frame = render_bundled(&mut lab, &PageState::default(), &all()).unwrap();
    let sections = frame.readouts.gallery.unwrap();
    assert_eq!(sections.len(), 1);
    assert_eq!(sections[0].items.len(), GALLERY_LIMIT);
    assert_eq!(
        text_patch(&frame.readouts.patches, "gallery-count"),
        "48 images (the first ones)."
    );
    let extremes = PageState {
        gallery: GalleryChoice::Extremes,
        ..PageState::default()
    };
    let frame = render_bundled(&mut lab, &extremes, &all()).unwrap();
    let sections = frame.readouts.gallery.unwrap();
    assert_eq!(
        sections.iter().map(|s| s.items.len()).collect::<Vec<_>>(),
        [EXTREMES, EXTREMES]
    );
    assert_eq!(
        text_patch(&frame.readouts.patches, "gallery-count"),
        "16 images."
    );
}

/// One frame of the bundled labs with the τ lab's store.
fn ood_frame(lab: &mut Lab, store: &mut OodStore, state: &PageState, visible: &Visible) -> Frame {
    let rows = lab.rows();
    render(
        LabData::Bundled {
            lab,
            store,
            shifts: &mut ShiftStore::new(NUM_CLASSES, MODELS.len(), rows),
        },
        state,
        visible,
    )
    .unwrap()
}

/// The τ lab alone on screen, with its charts.
fn tau_lab_on_screen() -> Visible {
    Visible {
        temperature: false,
        conformal: false,
        gallery: false,
        ood: true,
        shift: false,
        own_image: false,
        explain: None,
        figures: vec![
            Figure::OodHistogram,
            Figure::OodRoc,
            Figure::OodNorms,
            Figure::TauChart,
        ],
        blocks: Vec::new(),
    }
}

/// A lab of 300 test images with cross-entropy's logits, and an OOD store of 20 images a set.
fn tau_lab() -> (Lab, OodStore) {
    let rows = 300;
    let lab = lab_with_logits(rows, rows);
    (
        lab,
        OodStore::new(NUM_CLASSES, MODELS.len(), rows, [20, 20, 20]),
    )
}

/// Gives the `chosen` network cross-entropy's test logits (as `lab_with_logits` makes them, the
/// `rows` of `lab`) and both networks flatter logits on the 20 MNIST images of `store`: what
/// the τ lab waits for. Returns the test logits and the MNIST ones.
fn complete_the_tau_lab(
    lab: &mut Lab,
    store: &mut OodStore,
    chosen: usize,
    ce: usize,
) -> (Vec<f32>, Vec<f32>) {
    let test: Vec<f32> = (0..lab.rows())
        .flat_map(|i| (0..NUM_CLASSES).map(move |k| if k == i % NUM_CLASSES { 2.0 } else { 0.0 }))
        .collect();
    lab.add_logits(chosen, 0, &test).unwrap();
    let flat: Vec<f32> = (0..20 * NUM_CLASSES)
        .map(|i| (i % 7) as f32 * 0.1)
        .collect();
    for model in [chosen, ce] {
        store.add_logits(model, OodSet::Mnist, 0, &flat).unwrap();
    }
    (test, flat)
}

#[test]
fn the_tau_labs_histogram_and_roc_curves_are_computed_only_on_screen() {
    let (mut lab, mut store) = tau_lab();
    let state = PageState::default();
    let (chosen, ce) = (state.tau.index().unwrap(), Network::Ce.index().unwrap());
    complete_the_tau_lab(&mut lab, &mut store, chosen, ce);
    let on_screen = ood_frame(&mut lab, &mut store, &state, &tau_lab_on_screen());
    let charts = on_screen.ood.as_ref().unwrap();
    assert!(charts.score_histogram.is_some() && !charts.roc.is_empty());
    let below = Visible {
        figures: vec![Figure::OodPvalues],
        ..tau_lab_on_screen()
    };
    let off_screen = ood_frame(&mut lab, &mut store, &state, &below);
    let charts = off_screen.ood.as_ref().unwrap();
    assert!(charts.score_histogram.is_none() && charts.roc.is_empty());
    assert_eq!(off_screen.readouts.patches, on_screen.readouts.patches);
}

#[test]
fn the_tau_lab_asks_for_what_it_lacks_then_reports_the_views_numbers() {
    let (mut lab, mut store) = tau_lab();
    let visible = tau_lab_on_screen();
    let state = PageState::default();
    let chosen = state.tau.index().unwrap();
    let ce = Network::Ce.index().unwrap();
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    let needs: Vec<(usize, crate::lab::ImageSet)> = frame
        .readouts
        .needs
        .iter()
        .map(|j| (j.model, j.set))
        .collect();
    // Cross-entropy's test logits are there; the chosen network's and both OOD sets are not.
    assert_eq!(
        needs,
        [
            (chosen, crate::lab::ImageSet::Test),
            (chosen, crate::lab::ImageSet::Mnist),
            (ce, crate::lab::ImageSet::Mnist),
        ]
    );
    assert!(frame.ood.is_none());
    assert!(text_patch(&frame.readouts.patches, "ood-status").starts_with("Running "));

    let (test, flat) = complete_the_tau_lab(&mut lab, &mut store, chosen, ce);
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    assert!(frame.readouts.needs.is_empty());
    assert_eq!(frame.readouts.drawn, ["ood"]);
    let charts = frame.ood.unwrap();
    assert_eq!(
        charts.roc.len(),
        2,
        "cross-entropy's curve and the chosen network's"
    );
    assert_eq!(charts.tau_points.len(), 2);
    let in_distribution = lab.complete_logits(chosen).unwrap().unwrap().to_vec();
    let view = store
        .view(chosen, OodSet::Mnist, state.t, &in_distribution, 0)
        .unwrap();
    let energy = &view
        .summary(crate::lab::ood_view::ScoreKind::Energy)
        .unwrap()
        .metrics;
    let rows_patch = frame
        .readouts
        .patches
        .iter()
        .find_map(|p| match p {
            Patch::Rows {
                id: "ood-metrics",
                rows,
            } => Some(rows.clone()),
            _ => None,
        })
        .unwrap();
    let cell = |metric: &str| {
        rows_patch
            .iter()
            .flat_map(|r| &r.cells)
            .find(|c| c.metric.as_deref() == Some(metric))
            .unwrap()
            .value
    };
    assert_eq!(cell("fpr95_energy"), Some(energy.fpr95));
    assert_eq!(cell("auroc_energy"), Some(energy.auroc));
    assert_eq!(cell("fpr95_odin"), None, "ODIN is not computed");
    assert_eq!(frame.readouts.odin_needs.len(), 4);
    let lesson = text_patch(&frame.readouts.patches, "ood-lesson");
    assert!(lesson.contains(&percent(energy.fpr95, 1)), "{lesson}");
    let summary = text_patch(&frame.readouts.patches, "ood-histogram-summary");
    assert!(
        summary.contains(&format!("lets through {}", percent(energy.fpr95, 1)))
            && summary.contains(&format!("AUROC {:.3}", energy.auroc)),
        "{summary}"
    );
    assert_eq!(frame.readouts.ood_galleries.len(), 2);
    let seeds = text_patch(&frame.readouts.patches, "tau-seeds");
    assert!(seeds.contains("evaluate every network"), "{seeds}");

    // Cross-entropy's seed 1, once evaluated, joins the τ chart as a second seed of its τ, and
    // the seed sentence gives the mean over both seeds.
    let seed_one = Network::Ce.seed_models()[1];
    assert_eq!(MODELS[seed_one].seed, 1);
    lab.add_logits(seed_one, 0, &test).unwrap();
    let flatter: Vec<f32> = flat.iter().map(|z| z * 3.0).collect();
    store
        .add_logits(seed_one, OodSet::Mnist, 0, &flatter)
        .unwrap();
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    let points = frame.ood.unwrap().tau_points;
    let ce_points: Vec<_> = points.iter().filter(|p| p.tau.is_none()).collect();
    assert_eq!(ce_points.iter().map(|p| p.seed).collect::<Vec<_>>(), [0, 1]);
    let mut fpr95 = |model: usize| {
        let logits = lab.complete_logits(model).unwrap().unwrap().to_vec();
        let view = store
            .view(model, OodSet::Mnist, state.t, &logits, 0)
            .unwrap();
        view.summary(crate::lab::ood_view::ScoreKind::Energy)
            .unwrap()
            .metrics
            .fpr95
    };
    let mean = (fpr95(ce) + fpr95(seed_one)) / 2.0;
    let seeds = text_patch(&frame.readouts.patches, "tau-seeds");
    assert!(
        seeds.contains(&format!(
            "cross-entropy: FPR95 {mean:.3} on average over 2 seeds"
        )),
        "{seeds}"
    );
}

/// `rows` rows of seeded ReLU-like features, class `row % 10` raised on its own units.
fn synthetic_features(rows: usize, seed: u64) -> Vec<f32> {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let normal = rand_distr::Normal::new(0.0_f32, 1.0).unwrap();
    (0..rows * crate::lab::FEATURE_WIDTH)
        .map(|i| {
            let (row, unit) = (i / crate::lab::FEATURE_WIDTH, i % crate::lab::FEATURE_WIDTH);
            let raised = if unit % NUM_CLASSES == row % NUM_CLASSES {
                2.0
            } else {
                0.0
            };
            (normal.sample(&mut rng) + raised).max(0.0)
        })
        .collect()
}

#[test]
fn a_feature_score_waits_for_the_worker_then_the_lab_follows_it() {
    use crate::lab::ood_view::ScoreKind;
    use crate::lab::{FeatureRequest, ImageSet, FEATURE_WIDTH};
    let (rows, set_rows) = (300, 20);
    let mut lab = lab_with_logits(rows, rows);
    let mut store = OodStore::new(NUM_CLASSES, MODELS.len(), rows, [set_rows; 3]);
    let visible = tau_lab_on_screen();
    let state = PageState {
        ood_score: ScoreKind::Knn,
        ..PageState::default()
    };
    let chosen = state.tau.index().unwrap();
    let ce = Network::Ce.index().unwrap();
    let test = lab.complete_logits(ce).unwrap().unwrap().to_vec();
    lab.add_logits(chosen, 0, &test).unwrap();
    let ood_logits: Vec<f32> = (0..set_rows * NUM_CLASSES)
        .map(|i| (i % 7) as f32 * 0.1)
        .collect();
    // A feature score asks for every OOD set, not only the chosen one.
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    assert_eq!(frame.readouts.needs.len(), 6);
    for model in [chosen, ce] {
        for set in OodSet::ALL {
            store.add_logits(model, set, 0, &ood_logits).unwrap();
        }
    }
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    assert!(frame.readouts.needs.is_empty());
    assert!(
        frame.readouts.feature_requests.is_empty(),
        "no features yet"
    );
    let status = text_patch(&frame.readouts.patches, "feature-status");
    assert!(
        status.contains("calibration half (150 test images") && status.ends_with("shown…"),
        "{status}"
    );
    let charts = frame.ood.unwrap();
    assert!(charts.score_histogram.is_none() && charts.roc.is_empty());

    let last_layer: Vec<f32> = (0..NUM_CLASSES * (FEATURE_WIDTH + 1))
        .map(|i| ((i * 37 % 11) as f32 - 5.0) * 0.01)
        .collect();
    for (model, seed) in [(chosen, 10), (ce, 20)] {
        store
            .features_mut()
            .add_features(model, ImageSet::Test, 0, &synthetic_features(rows, seed))
            .unwrap();
        for (set, offset) in OodSet::ALL.into_iter().zip(1..) {
            let features: Vec<f32> = synthetic_features(set_rows, seed + offset)
                .iter()
                .map(|v| v * 0.5)
                .collect();
            store
                .features_mut()
                .add_features(model, set.into(), 0, &features)
                .unwrap();
        }
        store
            .features_mut()
            .set_last_layer(model, &last_layer)
            .unwrap();
    }
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    let split = lab.split_seed();
    assert_eq!(
        frame.readouts.feature_requests,
        [
            FeatureRequest {
                model: chosen,
                split
            },
            FeatureRequest { model: ce, split }
        ]
    );

    // What the worker computes, kept: the lab then shows KNN's numbers on the evaluation half.
    for request in frame.readouts.feature_requests {
        let inputs = store
            .features()
            .inputs(request.model, lab.calibration_flags(), lab.labels())
            .unwrap();
        store
            .features_mut()
            .add_scores(request, inputs.scores().unwrap());
    }
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    assert!(frame.readouts.feature_requests.is_empty());
    let status = text_patch(&frame.readouts.patches, "feature-status");
    assert!(status.ends_with("k = 1."), "{status}");
    let scores = store
        .features()
        .scores(&FeatureRequest {
            model: chosen,
            split,
        })
        .unwrap();
    let (evaluation, mnist) = scores.of(ScoreKind::Knn, OodSet::Mnist);
    let (evaluation, mnist) = (evaluation.to_vec(), mnist.to_vec());
    assert_eq!(evaluation.len(), 150);
    let expected = crate::ood::detection_metrics(&evaluation, &mnist).unwrap();
    assert_eq!(
        metric_patch_in_rows(&frame, "fpr95_knn").0,
        Some(expected.fpr95)
    );
    assert_eq!(
        metric_patch_in_rows(&frame, "auroc_knn").0,
        Some(expected.auroc)
    );
    let charts = frame.ood.unwrap();
    let (_, _, fpr95) = charts.score_histogram.unwrap();
    assert_eq!(fpr95, expected.fpr95);
    assert_eq!(charts.roc.len(), 2);
    assert_eq!(charts.tau_points.len(), 2, "the τ chart follows KNN");

    // The ranking of every score on both networks, on the evaluation half, from the worker.
    let request = frame.readouts.ranking_request.unwrap();
    assert_eq!(
        request.candidates.len(),
        18,
        "nine scores (no ODIN) on each network"
    );
    assert_eq!(
        text_patch(&frame.readouts.patches, "ood-ranking-lesson"),
        "Ranking every score on both networks, with 95% bootstrap intervals…"
    );
    let (scores, rows_in, rows_out) = ranking_scores(&lab, &mut store, &request).unwrap();
    assert_eq!((rows_in, rows_out), (150, set_rows));
    let candidates: Vec<(&[f64], &[f64])> = scores
        .chunks_exact(rows_in + rows_out)
        .map(|c| c.split_at(rows_in))
        .collect();
    // KNN on the chosen network: its evaluation-half scores as the view holds them.
    let knn = request
        .candidates
        .iter()
        .position(|&c| c == (ScoreKind::Knn, chosen))
        .unwrap();
    assert_eq!(candidates[knn], (&evaluation[..], &mnist[..]));
    let ranking =
        crate::ood_ranking::rank_detectors(&candidates, &crate::lab::DIFFERENCE_BOOTSTRAP).unwrap();
    store.add_ranking(request, ranking.clone());
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    assert!(frame.readouts.ranking_request.is_none());
    assert_eq!(table_rows(&frame.readouts.patches, "ood-ranking").len(), 18);
    let lesson = text_patch(&frame.readouts.patches, "ood-ranking-lesson");
    let best = &ranking.ranked[0].metrics.auroc;
    assert!(
        lesson.starts_with("Here ")
            && lesson.contains(&format!(
                "AUROC {:.3} ({:.3} to {:.3})",
                best.estimate, best.lower, best.upper
            ))
            && lesson.contains(if ranking.lead_beyond_noise().unwrap() {
                "larger than the noise"
            } else {
                "within the noise"
            }),
        "{lesson}"
    );
}

#[test]
fn the_committed_digits_fill_the_ood_store_and_another_count_is_refused_by_name() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/mnist-ood-images-idx3-ubyte.gz"
    );
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        mnist_pixels(
            crate::data::parse_idx_images(&bytes, "digits").unwrap(),
            "digits"
        )
        .unwrap()
        .len(),
        OOD_IMAGES * IMAGE_SIDE * IMAGE_SIDE
    );

    // An IDX header for three 28×28 images (magic 0x00000803, then the dimensions), and their
    // pixels.
    let mut three = vec![0, 0, 8, 3];
    for dimension in [3u32, 28, 28] {
        three.extend_from_slice(&dimension.to_be_bytes());
    }
    three.resize(three.len() + 3 * IMAGE_SIDE * IMAGE_SIDE, 0);
    assert_eq!(
        mnist_pixels(
            crate::data::parse_unzipped_idx_images(&three, "short.idx").unwrap(),
            "short.idx"
        )
        .unwrap_err()
        .to_string(),
        format!("short.idx: holds 3 images, expected {OOD_IMAGES}")
    );
}

#[test]
fn a_patch_is_sent_again_only_when_it_changes() {
    let row = |text: &str| TableRow {
        current: false,
        cells: vec![TableCell {
            text: text.to_string(),
            metric: None,
            value: None,
        }],
    };
    let rows = |id: &'static str, text: &str| Patch::Rows {
        id,
        rows: vec![row(text)],
    };
    let text = |id: &'static str, text: &str| Patch::Text {
        id,
        text: text.to_string(),
    };
    let metric = |id: Option<&'static str>, metric: &str, value: f64| Patch::Metric {
        id,
        metric: metric.to_string(),
        value: Some(value),
        text: format!("{value}"),
        title: None,
    };
    let control = Patch::Control {
        id: "temperature",
        value: "500".to_string(),
        valuetext: None,
    };
    let checked = Patch::Checked {
        id: "mondrian",
        checked: true,
    };
    let hidden = |hidden: bool| Patch::Hidden {
        id: "status",
        hidden,
    };
    let mut sent = SentPatches::default();
    let mut first = vec![
        text("status", "same"),
        hidden(false),
        rows("rivals", "a"),
        rows("comparison", "x"),
        metric(None, "ece", 0.1),
        metric(Some("ece-at-one"), "ece", 0.2),
        control.clone(),
        checked.clone(),
    ];
    let all = first.clone();
    sent.drop_unchanged(&mut first);
    assert_eq!(first, all);
    // Unchanged patches go, a control's value and a check box too; a text and the hidden flag
    // of one element, or a readout by id and by metric, are apart.
    let mut second = vec![
        text("status", "same"),
        hidden(true),
        rows("rivals", "a"),
        rows("comparison", "y"),
        metric(None, "ece", 0.1),
        metric(Some("ece-at-one"), "ece", 0.3),
        control.clone(),
        checked.clone(),
    ];
    sent.drop_unchanged(&mut second);
    assert_eq!(
        second,
        vec![
            hidden(true),
            rows("comparison", "y"),
            metric(Some("ece-at-one"), "ece", 0.3),
        ]
    );
    // A patch changed and changed back is sent both times.
    let mut third = vec![rows("comparison", "x"), hidden(false)];
    sent.drop_unchanged(&mut third);
    assert_eq!(third, vec![rows("comparison", "x"), hidden(false)]);
    // A control the reader has changed gets the state's value back, equal or not to the last
    // one sent; what else was sent to that element is still known.
    let label = Patch::Text {
        id: "temperature",
        text: "T".to_string(),
    };
    sent.drop_unchanged(&mut vec![label.clone()]);
    sent.forget("temperature");
    sent.forget("mondrian");
    let mut fourth = vec![
        control.clone(),
        checked.clone(),
        text("status", "same"),
        label,
    ];
    sent.drop_unchanged(&mut fourth);
    assert_eq!(fourth, vec![control, checked]);
}

/// The rows of a CSV text, header first.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|record| record.unwrap().iter().map(str::to_string).collect())
        .collect()
}

/// Canvases the reader draws on rather than reads: inputs, not figures.
const INPUT_CANVASES: [&str; 1] = ["own-pad"];

#[test]
fn every_canvas_of_the_page_is_a_figure_and_every_figure_one_canvas() {
    let html = include_str!("../../www/index.html");
    let mut canvases: Vec<&str> = html
        .split("<canvas id=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .filter(|id| !INPUT_CANVASES.contains(id))
        .collect();
    canvases.sort_unstable();
    let mut figures: Vec<String> = FIGURES.iter().map(|f| f.id.id()).collect();
    figures.sort_unstable();
    assert_eq!(canvases, figures);
    figures.dedup();
    assert_eq!(figures.len(), FIGURES.len(), "a figure listed twice");
}

#[test]
fn a_figures_csv_holds_exactly_the_numbers_it_draws() {
    let mut lab = lab_with_logits(300, 300);
    let state = PageState {
        t: 0.7,
        bins: 10,
        ..PageState::default()
    };
    // The smooth diagram's band is computed only while the diagram is on screen.
    let visible = Visible {
        figures: vec![Figure::SmoothReliability],
        ..all()
    };
    let frame = render_bundled(&mut lab, &state, &visible).unwrap();
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    let view = frame.temperature.as_ref().unwrap();
    // Each column means what its header says: the histogram's file holds counts, not the
    // overall mean confidence repeated under a per-bin header.
    let histogram = csv_rows(&figure::csv(Figure::Histogram, &sources).unwrap());
    assert_eq!(histogram[0], ["bin_lower", "bin_upper", "count"]);
    // The smooth curve's file flags the points the chart leaves out, and only there may the
    // smoothed accuracy leave [0, 1].
    let smooth = csv_rows(&figure::csv(Figure::SmoothReliability, &sources).unwrap());
    assert_eq!(smooth[0][..3], ["confidence", "accuracy", "shown"]);
    assert!(smooth[1..].iter().any(|row| row[2] == "1"));
    for row in &smooth[1..] {
        let accuracy: f64 = row[1].parse().unwrap();
        assert!(
            row[2] == "0" || (0.0..=1.0).contains(&accuracy),
            "shown at {row:?}"
        );
    }
    // The cumulative differences: one row per image, the curve as the chart draws it.
    let cumulative = csv_rows(&figure::csv(Figure::CumulativeDifferences, &sources).unwrap());
    assert_eq!(
        cumulative[0],
        ["share_of_images", "confidence", "cumulative_difference"]
    );
    assert_eq!(cumulative.len(), 1 + view.n_evaluation);
    for (k, row) in cumulative[1..].iter().enumerate() {
        let read = |i: usize| row[i].parse::<f64>().unwrap();
        assert_eq!(
            (read(0), read(1), read(2)),
            (
                (k + 1) as f64 / view.n_evaluation as f64,
                view.cumulative.as_ref().unwrap().sorted_confidence[k],
                view.cumulative.as_ref().unwrap().curve[k]
            )
        );
    }
    // The CORP diagram: one row per PAV block, its rows adding up to the evaluation half.
    let corp = csv_rows(&figure::csv(Figure::CorpReliability, &sources).unwrap());
    assert_eq!(
        corp[0],
        [
            "lowest_confidence",
            "highest_confidence",
            "rows",
            "right",
            "mean_confidence",
            "share_right"
        ]
    );
    let [corp_at_slider, ..] = view.corp.as_ref().unwrap();
    assert_eq!(corp.len(), 1 + corp_at_slider.blocks.len());
    let counted: usize = corp[1..]
        .iter()
        .map(|row| row[2].parse::<usize>().unwrap())
        .sum();
    assert_eq!(counted, view.n_evaluation);
    for (row, block) in corp[1..].iter().zip(&corp_at_slider.blocks) {
        assert_eq!(row[5].parse::<f64>().unwrap(), block.value);
        assert_eq!(row[0].parse::<f64>().unwrap(), block.lowest);
    }
    let rows = csv_rows(&figure::csv(Figure::Reliability, &sources).unwrap());
    assert_eq!(
        rows[0],
        [
            "bin_lower",
            "bin_upper",
            "count",
            "mean_confidence",
            "accuracy"
        ]
    );
    assert_eq!(rows.len(), 1 + view.at_temperature.bins.len());
    for (row, bin) in rows[1..].iter().zip(&view.at_temperature.bins) {
        if bin.count == 0 {
            // An empty bin has no mean confidence or accuracy: blank, not 0.
            assert_eq!(row[3..], ["", ""]);
            continue;
        }
        let read = |i: usize| row[i].parse::<f64>().unwrap();
        // Shortest round-trip text: the same f64 back, bit for bit.
        assert_eq!(
            (
                read(0),
                read(1),
                row[2].parse::<usize>().unwrap(),
                read(3),
                read(4)
            ),
            (
                bin.lower,
                bin.upper,
                bin.count,
                bin.confidence,
                bin.accuracy
            )
        );
    }
    let conformal = frame.conformal.as_ref().unwrap();
    let sizes = csv_rows(&figure::csv(Figure::SetSizes, &sources).unwrap());
    assert_eq!(sizes[0], ["set_size", "count"]);
    let counted: usize = sizes[1..]
        .iter()
        .map(|r| r[1].parse::<usize>().unwrap())
        .sum();
    assert_eq!(counted, conformal.n_evaluation);
    // A class name with a slash is one field; a class without images would be an empty one.
    let per_class = csv_rows(&figure::csv(Figure::PerClass, &sources).unwrap());
    assert_eq!(per_class[1][0], "T-shirt/top");
    assert_eq!(per_class.len(), 1 + NUM_CLASSES);
    assert_eq!(per_class[1][2].parse::<f64>().unwrap(), 1.0 - state.alpha);
    // Several diagrams in one table: each bin a row, led by its class.
    let classwise = csv_rows(&figure::csv(Figure::Classwise, &sources).unwrap());
    assert_eq!(classwise[0][..2], ["class", "bin_lower"]);
    let bins: usize = view.classwise_bins.iter().map(Vec::len).sum();
    assert_eq!(classwise.len(), 1 + bins);
    assert_eq!(classwise[bins][0], "Ankle boot");
}

/// One frame of the bundled lab with an empty OOD store.
fn render_bundled(lab: &mut Lab, state: &PageState, visible: &Visible) -> Result<Frame, LabError> {
    let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), lab.rows());
    render(
        LabData::Bundled {
            lab,
            store: &mut store(),
            shifts: &mut shifts,
        },
        state,
        visible,
    )
}

/// `figure` drawn as a 400×300 SVG document, as the page draws a download.
fn svg(figure: Figure, sources: &Sources) -> Result<String, FigureError> {
    let mut text = String::new();
    let backend = plotters::prelude::SVGBackend::with_string(&mut text, (400, 300));
    figure::render_on(
        figure,
        sources,
        backend,
        &crate::plot::ChartStyle { scale: 1.0 },
    )?;
    Ok(text)
}

#[test]
fn a_figure_draws_as_svg_only_once_its_view_is_computed() {
    let mut lab = lab_with_logits(300, 300);
    let frame = render_bundled(&mut lab, &PageState::default(), &all()).unwrap();
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    let drawn = svg(Figure::Reliability, &sources).unwrap();
    assert!(
        drawn.starts_with("<svg width=\"400\" height=\"300\""),
        "{drawn:.80}"
    );
    // The reliability diagram's axes, as the canvas shows them.
    let texts: Vec<&str> = drawn
        .split("<text ")
        .skip(1)
        .filter_map(|rest| rest.split_once('>')?.1.split_once("</text>"))
        .map(|(content, _)| content.trim())
        .collect();
    for axis in ["confidence", "accuracy"] {
        assert!(texts.contains(&axis), "no {axis} in {texts:?}");
    }
    for figure in [Figure::TauChart, Figure::Experiment] {
        let error = svg(figure, &sources).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("the {} is not computed yet", figure.info().title)
        );
        assert!(figure::csv(figure, &sources).is_err());
    }
}

#[test]
fn numbers_on_partial_data_say_they_are_provisional_and_stop_saying_it_when_all_are_in() {
    let text_of = |lab: &mut Lab, id| {
        let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), lab.rows());
        let frame = render(
            LabData::Bundled {
                lab,
                store: &mut store(),
                shifts: &mut shifts,
            },
            &PageState::default(),
            &all(),
        )
        .unwrap();
        text_patch(&frame.readouts.patches, id).to_string()
    };
    let mut partial = lab_with_logits(300, 150);
    assert_eq!(text_of(&mut partial, "fit-provisional"), " (provisional)");
    let line =
        "Provisional: computed on the 150 of 300 test images classified so far; the numbers \
                settle once all are in.";
    assert_eq!(text_of(&mut partial, "temperature-provisional"), line);
    assert_eq!(text_of(&mut partial, "conformal-provisional"), line);
    let mut complete = lab_with_logits(300, 300);
    assert_eq!(text_of(&mut complete, "fit-provisional"), "");
    assert_eq!(
        text_of(&mut complete, "temperature-provisional"),
        "Computed on all 300 test images."
    );
}

/// A frame of the bundled networks' lab with the corrupted copies of `shifts`.
fn render_with_shifts(
    lab: &mut Lab,
    shifts: &mut ShiftStore,
    state: &PageState,
    visible: &Visible,
) -> Frame {
    render(
        LabData::Bundled {
            lab,
            store: &mut store(),
            shifts,
        },
        state,
        visible,
    )
    .unwrap()
}

/// Logits of a corrupted copy for `rows` rows: every row favours the next class, with logits
/// twice as large as `lab_with_logits`'s.
fn every_row_wrong(rows: usize) -> Vec<f32> {
    (0..rows)
        .flat_map(|i| {
            (0..NUM_CLASSES).map(move |k| if k == (i + 1) % NUM_CLASSES { 4.0 } else { 0.0 })
        })
        .collect()
}

#[test]
fn the_shift_lab_shows_weighted_conformal_beside_kept_and_refitted() {
    let rows = 400;
    let mut lab = lab_with_logits(rows, rows);
    let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), rows);
    let visible = Visible {
        shift: true,
        ..Visible::default()
    };
    let state = PageState::from_hash("shift=blur&severity=2").0;
    let frame = render_with_shifts(&mut lab, &mut shifts, &state, &visible);
    // The shown severity's logits are arriving: no number, no sentence.
    let (value, text) = metric_patch(&frame.readouts.patches, "shift_weighted_coverage");
    assert_eq!((value, text.as_str()), (&None, "…"));
    assert_eq!(
        text_patch(&frame.readouts.patches, "shift-weighted-sentence"),
        ""
    );

    // Every corrupted row favours a wrong class with logits unlike any clean row's (4 against
    // the clean rows' 2): the domains separate, and the weights are too extreme by construction.
    let set = crate::lab::ShiftedSet::parse("shift-blur-2").unwrap();
    shifts
        .add_logits(0, set, 0, &every_row_wrong(rows))
        .unwrap();
    let frame = render_with_shifts(&mut lab, &mut shifts, &state, &visible);
    let weighted = lab
        .weighted_view(
            &mut shifts,
            crate::shift::Corruption::Blur,
            2,
            &state.conformal_settings(),
        )
        .unwrap();
    let patches = &frame.readouts.patches;
    for (name, value, text) in [
        (
            "shift_weighted_coverage",
            weighted.coverage,
            percent(weighted.coverage, 2),
        ),
        (
            "shift_weighted_set_size",
            weighted.average_set_size,
            format!("{:.3}", weighted.average_set_size),
        ),
        (
            "shift_weighted_infinite_share",
            weighted.infinite_share,
            percent(weighted.infinite_share, 2),
        ),
    ] {
        assert_eq!(metric_patch(patches, name), (&Some(value), &text), "{name}");
    }
    let (ess, ess_text) = metric_patch(patches, "shift_weighted_ess");
    assert_eq!(*ess, Some(weighted.effective_sample_size));
    assert!(ess_text.ends_with(" of 200"), "{ess_text}");
    let sentence = text_patch(patches, "shift-weighted-sentence");
    assert!(
        sentence.contains("the estimated weights are too extreme to trust")
            || sentence.contains("The estimated weights are too extreme to trust"),
        "{sentence}"
    );
    assert!(
        sentence.contains(&percent(weighted.coverage, 2)),
        "{sentence}"
    );
}

#[test]
fn the_shift_lab_asks_for_the_shown_severity_first_then_shows_both_ways_and_judges_them() {
    let rows = 400;
    let mut lab = lab_with_logits(rows, rows);
    let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), rows);
    let visible = Visible {
        shift: true,
        figures: vec![Figure::ShiftReliability, Figure::ShiftSeverity],
        ..Visible::default()
    };
    let state = PageState::from_hash("shift=blur&severity=2").0;
    let frame_of =
        |lab: &mut Lab, shifts: &mut ShiftStore| render_with_shifts(lab, shifts, &state, &visible);
    let needs = |frame: &Frame| -> Vec<String> {
        frame
            .readouts
            .shift_needs
            .iter()
            .map(|j| j.set.clone())
            .collect()
    };
    let frame = frame_of(&mut lab, &mut shifts);
    assert_eq!(
        needs(&frame),
        ["shift-blur-2"],
        "the shown severity first, one copy at a time"
    );
    assert!(frame.readouts.shift_needs.iter().all(|j| j.model == 0));
    assert_eq!(
        text_patch(&frame.readouts.patches, "shift-progress"),
        "Severities evaluated for the cross-entropy network: 0 of 0–5. Classifying severity 2: 0 \
         of 400 corrupted images…"
    );
    assert_eq!(
        text_patch(&frame.readouts.patches, "shift-verdict"),
        "The corrupted images are being classified: the numbers follow."
    );
    assert!(frame.readouts.patches.contains(&Patch::Progress {
        id: "shift-progress-bar",
        value: 0,
        max: rows
    }));
    assert!(frame.readouts.patches.contains(&Patch::Hidden {
        id: "shift-progress-bar",
        hidden: false
    }));
    assert_eq!(
        metric_patch(&frame.readouts.patches, "shift_kept_coverage").0,
        &None
    );
    assert_eq!(frame.readouts.drawn, ["shift"]);

    let wrong = every_row_wrong(rows);
    let set = crate::lab::ShiftedSet::parse("shift-blur-2").unwrap();
    shifts.add_logits(0, set, 0, &wrong).unwrap();
    let frame = frame_of(&mut lab, &mut shifts);
    assert_eq!(
        needs(&frame),
        ["shift-blur-1"],
        "then the lowest severity not yet classified"
    );
    let view = frame.shift.as_ref().unwrap();
    let point = view.current().unwrap();
    assert_eq!(point.kept.accuracy, 0.0);
    for (column, metrics) in [
        ("clean", &view.clean().unwrap().kept),
        ("kept", &point.kept),
        ("refit", &point.refit),
    ] {
        let (value, text) =
            metric_patch(&frame.readouts.patches, &format!("shift_{column}_coverage"));
        assert_eq!(*value, Some(metrics.coverage));
        assert_eq!(text, &percent(metrics.coverage, 2));
    }
    let verdict = text_patch(&frame.readouts.patches, "shift-verdict");
    assert!(
        verdict.starts_with(&format!(
            "Gaussian blur at severity 2 (σ = 1.0 px): accuracy 0.00% (clean: {}). With T and q̂ \
             from the clean calibration half: Coverage {} is ",
            percent(view.clean().unwrap().kept.accuracy, 2),
            percent(point.kept.coverage, 2)
        )),
        "{verdict}"
    );
    assert!(
        verdict.contains("below the band, more than chance gives for one split; the corrupted"),
        "{verdict}"
    );
    assert!(
        verdict.ends_with(&format!(
            "The refitted sets hold {:.3} labels on average (clean: {:.3}).",
            point.refit.average_set_size,
            view.clean().unwrap().kept.average_set_size
        )),
        "{verdict}"
    );
    assert_eq!(
        text_patch(&frame.readouts.patches, "shift-progress"),
        "Severities evaluated for the cross-entropy network: 0, 2 of 0–5. Classifying severity 1: \
         0 of 400 corrupted images…"
    );
    // Blur 2 is in: the bar follows blur 1, the next copy.
    assert!(frame.readouts.patches.contains(&Patch::Hidden {
        id: "shift-progress-bar",
        hidden: false
    }));
    let Some(Patch::Rows { rows: table, .. }) = frame.readouts.patches.iter().find(|p| {
        matches!(
            p,
            Patch::Rows {
                id: "shift-severities",
                ..
            }
        )
    }) else {
        panic!("no severity table");
    };
    assert_eq!(table.len(), 2);
    assert!(!table[0].current && table[1].current);
    assert_eq!(table[1].cells[0].text, "2 (σ = 1.0 px)");
    // Both figures draw from the frame, and their CSVs carry its numbers.
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    let severities = csv_rows(&figure::csv(Figure::ShiftSeverity, &sources).unwrap());
    assert_eq!(severities.len(), 3);
    assert_eq!(severities[2][0], "2");
    assert_eq!(
        severities[2][5].parse::<f64>().unwrap(),
        point.kept.coverage
    );
    assert_eq!(
        severities[2][7].parse::<f64>().unwrap(),
        point.refit.coverage
    );
    let bins = csv_rows(&figure::csv(Figure::ShiftReliability, &sources).unwrap());
    assert_eq!(bins.len(), 1 + point.kept.bins.len());
    for figure in [Figure::ShiftReliability, Figure::ShiftSeverity] {
        let mut svg = String::new();
        figure::render_on(
            figure,
            &sources,
            plotters::prelude::SVGBackend::with_string(&mut svg, (600, 400)),
            &crate::plot::ChartStyle::default(),
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{figure:?}");
    }
}

/// The rows of the table `id` in `patches`.
fn table_rows<'a>(patches: &'a [Patch], id: &str) -> &'a [TableRow] {
    patches
        .iter()
        .find_map(|p| match p {
            Patch::Rows { id: i, rows } if *i == id => Some(rows.as_slice()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no table #{id}"))
}

#[test]
fn the_rivals_wait_for_the_worker_and_never_show_numbers_of_another_state() {
    let state = PageState::default();
    let pending_cells = |frame: &Frame| {
        let rows = table_rows(&frame.readouts.patches, "rivals");
        assert_eq!(rows.len(), crate::recalibration::Method::ALL.len());
        rows.iter()
            .flat_map(|row| row.cells.iter().filter(|cell| cell.metric.is_some()))
            .all(|cell| cell.value.is_none() && cell.text == "…")
    };
    // Half the rows in: nothing to ask for yet.
    let mut partial = lab_with_logits(300, 150);
    let frame = render_bundled(&mut partial, &state, &all()).unwrap();
    assert_eq!(frame.readouts.rivals_request, None);
    assert!(pending_cells(&frame));
    assert_eq!(
        text_patch(&frame.readouts.patches, "rivals-accuracy-sentence"),
        crate::sentences::rivals_pending(false)
    );
    // Every row in: the frame asks, and shows no number or figure until the answer is kept.
    let mut lab = lab_with_logits(300, 300);
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    let request = frame.readouts.rivals_request.unwrap();
    assert!(pending_cells(&frame));
    assert_eq!(
        text_patch(&frame.readouts.patches, "rivals-accuracy-sentence"),
        crate::sentences::rivals_pending(true)
    );
    assert_eq!(
        text_patch(&frame.readouts.patches, "rivals-venn-abers-sentence"),
        ""
    );
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    assert!(matches!(
        svg(Figure::RivalsReliability, &sources),
        Err(FigureError::NotComputed(Figure::RivalsReliability))
    ));
    let answer = lab.worker_halves().unwrap().rivals(&request).unwrap();
    lab.add_rivals(request, answer.clone());
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    assert_eq!(frame.readouts.rivals_request, None);
    assert!(!pending_cells(&frame));
    // Vector scaling's ECE and Venn–Abers' NLL, cells of the same answer.
    use crate::recalibration::{Method, MethodReport};
    type Reading = fn(&MethodReport) -> f64;
    let cells: [(&str, Method, Reading); 2] = [
        ("rival_vector_ece", Method::Vector, |report| report.ece),
        ("rival_venn-abers_nll", Method::VennAbers, |report| {
            report.nll
        }),
    ];
    for (metric, method, figure) in cells {
        let (value, text) = metric_patch_in_rows(&frame, metric);
        let report = answer.reports.iter().find(|r| r.method == method).unwrap();
        assert_eq!(value, Some(figure(report)));
        assert_eq!(text, format!("{:.4}", figure(report)));
    }
    assert_eq!(
        text_patch(&frame.readouts.patches, "rivals-accuracy-sentence"),
        answer.accuracy_sentence
    );
    assert_eq!(
        text_patch(&frame.readouts.patches, "rivals-venn-abers-sentence"),
        answer.venn_abers_sentence
    );
    let (_, venn_abers_nll) = metric_patch_in_rows(&frame, "rival_venn-abers_nll");
    assert!(answer.venn_abers_sentence.contains(&venn_abers_nll));
    // Other bins: asked for again, and no number of the old bins is shown meanwhile.
    let rebinned = PageState {
        bins: 10,
        ..state.clone()
    };
    let frame = render_bundled(&mut lab, &rebinned, &all()).unwrap();
    assert_eq!(frame.readouts.rivals_request.map(|r| r.bins), Some(10));
    assert!(pending_cells(&frame));
}

/// The value and text of the table cell whose readout is `metric`.
fn metric_patch_in_rows(frame: &Frame, metric: &str) -> (Option<f64>, String) {
    frame
        .readouts
        .patches
        .iter()
        .filter_map(|p| match p {
            Patch::Rows { rows, .. } => Some(rows),
            _ => None,
        })
        .flatten()
        .flat_map(|row| &row.cells)
        .find(|cell| cell.metric.as_deref() == Some(metric))
        .map(|cell| (cell.value, cell.text.clone()))
        .unwrap_or_else(|| panic!("no cell {metric}"))
}

/// Every element a frame's patches name is in `index.html`: each id (`id="…"`), and each
/// readout sent to all elements that show it (`data-metric="…"`). A patch for an element that
/// is not there is dropped by `dom.js` without a word.
#[test]
fn every_element_a_patch_names_is_in_the_page() {
    let html = include_str!("../../www/index.html");
    let mut lab = lab_with_logits(300, 300);
    let visible = Visible {
        figures: FIGURES.iter().map(|f| f.id).collect(),
        ..all()
    };
    let (mut missing, mut checked) = (Vec::new(), 0);
    for state in [
        PageState::default(),
        PageState {
            mondrian: true,
            score: crate::lab::ScoreKind::Raps,
            ..PageState::default()
        },
    ] {
        let frame = render_bundled(&mut lab, &state, &visible).unwrap();
        let patches = serde_json::to_value(&frame.readouts.patches).unwrap();
        for patch in patches.as_array().unwrap() {
            let named = match (patch["id"].as_str(), patch["metric"].as_str()) {
                (Some(id), _) => format!("id=\"{id}\""),
                (None, Some(metric)) => format!("data-metric=\"{metric}\""),
                (None, None) => continue,
            };
            checked += 1;
            if !html.contains(&named) && !missing.contains(&named) {
                missing.push(named);
            }
        }
    }
    assert!(checked > 100, "only {checked} patches checked");
    assert!(
        missing.is_empty(),
        "patched but not in index.html: {missing:?}"
    );
}

/// Each block of readouts is an element of the page, and a frame sends a block's numbers only
/// while it or a figure that shows them is on screen: off screen, they cost the slider's frame
/// and nobody sees them (a block scrolling in asks for a frame, `frame.js`).
#[test]
fn a_frame_computes_the_blocks_on_screen_and_leaves_the_others_as_they_are() {
    let html = include_str!("../../www/index.html");
    for info in &BLOCKS {
        assert!(
            html.contains(&format!("id=\"{}\"", info.id.id())),
            "{:?}",
            info.id
        );
    }
    let mut lab = lab_with_logits(300, 300);
    let state = PageState::default();
    let mut metrics = |visible: &Visible| -> Vec<String> {
        let frame = render_bundled(&mut lab, &state, visible).unwrap();
        let patches = serde_json::to_value(&frame.readouts.patches).unwrap();
        patches
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|patch| patch["metric"].as_str().or(patch["id"].as_str()))
            .map(str::to_string)
            .collect()
    };
    let first_screen = Visible {
        temperature: true,
        conformal: true,
        ..Visible::default()
    };
    // What each block alone sends beyond the first screen's readouts.
    let shown = metrics(&first_screen);
    for always in [
        "ece",
        "accuracy",
        "smece_t1",
        "confidence-verdict",
        "mean_gap",
    ] {
        assert!(shown.iter().any(|m| m == always), "{always}");
    }
    let (none, no_figure): (&[Block], &[Figure]) = (&[], &[]);
    for (blocks, figures, names) in [
        (
            &[Block::TemperatureMetrics][..],
            no_figure,
            &["smece", "smece_bandwidth"][..],
        ),
        (
            none,
            &[Figure::SmoothReliability][..],
            &["smece", "smooth-reliability-summary"][..],
        ),
        (
            &[Block::Estimators][..],
            no_figure,
            &["estimator_ece", "ks_error", "estimators-agreement", "smece"][..],
        ),
        (
            none,
            &[Figure::CumulativeDifferences][..],
            &["cumulative-differences-summary"][..],
        ),
        (
            &[Block::BrierDecomposition][..],
            no_figure,
            &["brier_reliability", "brier-decomposition-sentence"][..],
        ),
        (
            &[Block::CorpDecomposition][..],
            no_figure,
            &["corp_brier_mcb", "corp-decomposition-sentence"][..],
        ),
        (
            none,
            &[Figure::CorpReliability][..],
            &["corp-reliability-summary", "corp_log_dsc"][..],
        ),
        (
            &[Block::ThresholdMethods][..],
            no_figure,
            &[
                "method_clustered_covgap",
                "covgap_floor_spread",
                "threshold-methods-sentence",
            ][..],
        ),
        (
            &[Block::ScoreComparison][..],
            no_figure,
            &["comparison"][..],
        ),
    ] {
        let on_screen = Visible {
            blocks: blocks.to_vec(),
            figures: figures.to_vec(),
            ..first_screen.clone()
        };
        let with = metrics(&on_screen);
        for name in names {
            assert!(!shown.contains(&name.to_string()), "{name} off screen");
            assert!(
                with.contains(&name.to_string()),
                "{name} with {on_screen:?}"
            );
        }
    }
}

#[test]
fn a_frame_draws_the_figures_on_screen_of_the_labs_it_computed_and_clears_those_waiting() {
    use FrameDrawing::{Clear, Draw};
    let every_figure: Vec<Figure> = FIGURES.iter().map(|info| info.id).collect();
    let visible = Visible {
        temperature: true,
        conformal: true,
        figures: every_figure.clone(),
        ..Visible::default()
    };
    let state = PageState::default();
    let mut waiting = lab_with_logits(300, 0);
    let frame = render_bundled(&mut waiting, &state, &visible).unwrap();
    assert_eq!(
        frame_figures(&frame, &every_figure),
        [],
        "no logits, no lab"
    );

    let mut lab = lab_with_logits(300, 300);
    let frame = render_bundled(&mut lab, &state, &visible).unwrap();
    assert_eq!(
        frame_figures(&frame, &every_figure),
        [
            (Figure::Reliability, Draw),
            (Figure::Histogram, Draw),
            (Figure::SmoothReliability, Draw),
            (Figure::CorpReliability, Draw),
            (Figure::CumulativeDifferences, Draw),
            (Figure::Classwise, Draw),
            (Figure::RivalsReliability, Clear),
            (Figure::TemperatureAnatomy, Clear),
            (Figure::SetSizes, Draw),
            (Figure::PerClass, Draw),
            (Figure::Stratified, Draw),
            (Figure::Sweep, Draw),
            (Figure::RiskCoverage, Draw),
        ],
        "the experiment is drawn by its run; the rivals and the anatomy wait for the worker"
    );
    assert_eq!(
        frame_figures(&frame, &[Figure::Histogram, Figure::OodRoc]),
        [(Figure::Histogram, Draw)],
        "a figure off screen, or of a lab not computed, is left as it is"
    );

    let request = frame.readouts.rivals_request.unwrap();
    let answer = lab.worker_halves().unwrap().rivals(&request).unwrap();
    lab.add_rivals(request, answer);
    let frame = render_bundled(&mut lab, &state, &visible).unwrap();
    assert_eq!(
        frame_figures(&frame, &[Figure::RivalsReliability]),
        [(Figure::RivalsReliability, Draw)]
    );
}

#[test]
fn a_figure_alone_computes_its_own_lab_only() {
    use figure::FigureLab;
    for info in &FIGURES {
        let visible = Visible::figure_alone(info.id);
        let labs = [
            (visible.temperature, FigureLab::Temperature),
            (visible.conformal, FigureLab::Conformal),
            (visible.ood, FigureLab::Ood),
            (visible.shift, FigureLab::Shift),
        ];
        for (computed, lab) in labs {
            assert_eq!(computed, lab == info.lab, "{:?} and {lab:?}", info.id);
        }
        assert_eq!(visible.figures, [info.id]);
    }
}

#[test]
fn every_choice_and_flag_control_shows_what_the_link_says() {
    let (state, rejected) = PageState::from_hash(
        "model=logitnorm&binning=mass&score=raps&randomized=0&mondrian=1&ood=uniform\
         &ood_score=msp&shift=blur&recalibrate=1&paper=1&case=empty_bins",
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    let link: std::collections::HashMap<String, String> = state
        .hash_entries()
        .into_iter()
        .map(|(key, text)| (key.to_string(), text))
        .collect();
    let patches = control_patches(&state);
    let mut checked = 0;
    for field in &FIELDS {
        let Some(id) = field.control else { continue };
        // The sliders are checked elsewhere.
        if !matches!(field.kind, FieldKind::Choice | FieldKind::Flag) {
            continue;
        }
        let written = &link[field.key];
        match field.kind {
            FieldKind::Choice => {
                let shown = patches.iter().find_map(|p| match p {
                    Patch::Control { id: i, value, .. } if *i == id => Some(value),
                    _ => None,
                });
                assert_eq!(shown, Some(written), "#{id}");
            }
            FieldKind::Flag => {
                let shown = patches.iter().find_map(|p| match p {
                    Patch::Checked { id: i, checked } if *i == id => Some(*checked),
                    _ => None,
                });
                assert_eq!(shown, Some(written == "1"), "#{id}");
            }
            _ => continue,
        }
        checked += 1;
    }
    assert_eq!(
        checked, 15,
        "the page's selects, check boxes and radio groups"
    );
}

#[test]
fn the_anatomy_waits_for_every_row_and_shows_each_mistake_switched_on() {
    let visible = Visible {
        temperature: true,
        figures: vec![Figure::TemperatureAnatomy],
        ..Visible::default()
    };
    let text_of = |frame: &Frame, wanted: &str| {
        frame.readouts.patches.iter().find_map(|patch| match patch {
            Patch::Text { id, text } if *id == wanted => Some(text.clone()),
            _ => None,
        })
    };
    let mut streaming = lab_with_logits(300, 200);
    let frame = render_bundled(&mut streaming, &PageState::default(), &visible).unwrap();
    assert!(frame.anatomy.is_none());
    assert_eq!(
        frame_figures(&frame, &[Figure::TemperatureAnatomy]),
        [(Figure::TemperatureAnatomy, FrameDrawing::Clear)],
        "the curves wait for every row"
    );
    assert_eq!(
        text_of(&frame, "anatomy-summary").as_deref(),
        Some(crate::sentences::anatomy_pending(false).as_str())
    );
    assert_eq!(frame.readouts.anatomy_request, None);

    let mut lab = lab_with_logits(300, 300);
    let (state, rejected) = PageState::from_hash("mistake_probabilities=1&mistake_minimise_ece=1");
    assert!(rejected.is_empty(), "{rejected:?}");
    let frame = render_bundled(&mut lab, &state, &visible).unwrap();
    assert_eq!(
        frame_figures(&frame, &[Figure::TemperatureAnatomy]),
        [(Figure::TemperatureAnatomy, FrameDrawing::Clear)],
        "the curves wait for the worker"
    );
    assert_eq!(
        text_of(&frame, "anatomy-summary").as_deref(),
        Some(crate::sentences::anatomy_pending(true).as_str())
    );
    let request = frame.readouts.anatomy_request.unwrap();
    let curves = lab.worker_halves().unwrap().anatomy(&request).unwrap();
    lab.add_anatomy(request, curves);
    let frame = render_bundled(&mut lab, &state, &visible).unwrap();
    let view = frame.anatomy.as_ref().unwrap();
    let shown: Vec<_> = view.mistakes.iter().map(|(fit, _)| fit.mistake).collect();
    assert_eq!(shown, [FitMistake::Probabilities, FitMistake::MinimiseEce]);
    assert_eq!(
        text_of(&frame, "mistake-evaluation-half-sentence").as_deref(),
        Some("")
    );
    for (id, (_, sentence)) in [
        "mistake-probabilities-sentence",
        "mistake-minimise-ece-sentence",
    ]
    .into_iter()
    .zip(&view.mistakes)
    {
        assert_eq!(text_of(&frame, id).as_ref(), Some(sentence), "{id}");
    }
    assert!(text_of(&frame, "anatomy-summary")
        .unwrap()
        .contains("NLL is least at T = "));
    // The figure and its CSV: a header and one row per grid temperature.
    let csv = figure::csv(
        Figure::TemperatureAnatomy,
        &Sources {
            frame: &frame,
            experiment: None,
        },
    )
    .unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + crate::temperature_anatomy::ANATOMY_POINTS
    );
    assert!(csv.starts_with("temperature,calibration_nll,"));
}

#[test]
fn the_pac_block_shows_the_labs_pac_view_at_the_states_delta_and_its_slider() {
    let mut lab = lab_with_logits(2_000, 2_000);
    let state = PageState::default().set("delta", "0.2").unwrap();
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    let patches = &frame.readouts.patches;
    let view = lab.pac_view(&state.conformal_settings(), 0.2).unwrap();
    let pac = view.pac.expect("1,000 calibration rows are enough");
    assert_eq!(
        metric_patch(patches, "pac_k"),
        (&Some(pac.k as f64), &crate::text::grouped(pac.k))
    );
    assert_eq!(metric_patch(patches, "pac_qhat").0, &Some(pac.qhat));
    assert_eq!(metric_patch(patches, "pac_coverage").0, &Some(pac.coverage));
    assert_eq!(
        metric_patch(patches, "marginal_k").0,
        &Some(view.marginal_k as f64)
    );
    assert_eq!(text_patch(patches, "pac-sentence"), view.sentence);
    assert_eq!(text_patch(patches, "pac-delta-value"), "0.20");
    assert!(patches.iter().any(|p| matches!(p,
        Patch::Control { id: "pac-delta", value, valuetext: Some(spoken) }
            if value == "0.2" && spoken == "δ = 0.20")));
    let range = FIELDS
        .iter()
        .find(|f| f.key == "delta")
        .and_then(Field::slider_range)
        .unwrap();
    assert_eq!(
        (range.control, range.min, range.max, range.step),
        ("pac-delta", 0.01, 0.5, 0.01)
    );
    // The experiment's PAC line: the share of its splits below 1 − α, and its caption.
    let experiment = lab
        .coverage_experiment(&state.conformal_settings(), 0.2, state.risk, 50, 1)
        .unwrap();
    let readouts = experiment_readouts(&state, &experiment);
    let pac_run = experiment.pac.as_ref().unwrap();
    assert_eq!(
        text_patch(&readouts.patches, "pac-experiment-caption"),
        pac_run.caption
    );
    assert_eq!(
        metric_patch(&readouts.patches, "pac_experiment_below").0,
        &Some(pac_run.figures.pac_below as f64 / 50.0)
    );
    // Its risk control line at the state's risk level, on the same splits.
    let risk_run = experiment.risk_control.as_ref().unwrap();
    assert_eq!(
        text_patch(&readouts.patches, "risk-experiment-caption"),
        risk_run.caption
    );
    assert_eq!(
        metric_patch(&readouts.patches, "risk_experiment_mean").0,
        &Some(risk_run.figures.mean)
    );
    assert_eq!(
        metric_patch(&readouts.patches, "risk_experiment_above").0,
        &Some(risk_run.figures.above as f64 / 50.0)
    );
    // A risk level too low for the calibration half: the caption says the check is off.
    let strict = lab
        .coverage_experiment(&state.conformal_settings(), 0.2, 0.0001, 50, 1)
        .unwrap();
    let readouts = experiment_readouts(&state, &strict);
    assert!(text_patch(&readouts.patches, "risk-experiment-caption")
        .starts_with("The calibration half is too small for conformal risk control"));
}

#[test]
fn the_selective_block_shows_the_labs_view_at_the_states_t_and_risk_level_and_its_slider() {
    let mut lab = lab_with_logits(2_000, 2_000);
    let state = PageState::default()
        .set("risk", "0.05")
        .and_then(|s| s.set("t", "2"))
        .unwrap();
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    let patches = &frame.readouts.patches;
    let view = lab.selective_view(2.0, 0.05).unwrap();
    let report = view
        .report
        .clone()
        .expect("1,000 calibration rows are enough");
    assert_eq!(metric_patch(patches, "selective_aurc").0, &Some(view.aurc));
    assert_eq!(
        metric_patch(patches, "selective_threshold").0,
        &Some(report.threshold)
    );
    assert_eq!(
        metric_patch(patches, "selective_coverage").0,
        &Some(report.coverage)
    );
    assert_eq!(
        metric_patch(patches, "selective_answered_error_rate").0,
        &Some(report.answered_error_rate)
    );
    assert_eq!(text_patch(patches, "selective-sentence"), view.sentence);
    assert_eq!(text_patch(patches, "selective-risk-value"), "5%");
    assert!(patches.iter().any(|p| matches!(p,
        Patch::Control { id: "selective-risk", value, valuetext: Some(spoken) }
            if value == "0.05" && spoken == "risk level 5%")));
    assert_eq!(frame.selective.as_ref(), Some(&view));
    let range = FIELDS
        .iter()
        .find(|f| f.key == "risk")
        .and_then(Field::slider_range)
        .unwrap();
    assert_eq!(
        (range.control, range.min, range.max, range.step),
        ("selective-risk", 0.01, 0.2, 0.01)
    );
}

/// The summary sentences at the end of the charts' captions, by id: each in the page, and each
/// carrying the numbers of the frame whose charts it describes.
#[test]
fn each_charts_text_alternative_carries_the_frames_numbers() {
    let html = include_str!("../../www/index.html");
    let summary = |frame: &Frame, id: &str| {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "#{id} is in the page"
        );
        text_patch(&frame.readouts.patches, id).to_string()
    };
    // The temperature and conformal labs, the rivals first pending, then fitted.
    let state = PageState::default();
    let mut lab = lab_with_logits(300, 300);
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    assert_eq!(summary(&frame, "rivals-reliability-summary"), "");
    let request = frame.readouts.rivals_request.unwrap();
    let answer = lab.worker_halves().unwrap().rivals(&request).unwrap();
    lab.add_rivals(request, answer.clone());
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    let view = frame.temperature.as_ref().unwrap();
    let smooth_ece = view.smooth.as_ref().unwrap().ece;
    let smooth = summary(&frame, "smooth-reliability-summary");
    assert!(
        smooth.starts_with(&format!(
            "Here: smooth ECE {:.4}, σ = {:.4}, on {} images; where the line is drawn",
            smooth_ece.smece, smooth_ece.bandwidth, view.n_evaluation
        )),
        "{smooth}"
    );
    let [corp_at_slider, ..] = view.corp.as_ref().unwrap();
    let corp = summary(&frame, "corp-reliability-summary");
    assert!(
        corp.contains(&format!(
            "Here PAV pools {} images into {} blocks",
            view.n_evaluation,
            corp_at_slider.blocks.len()
        )) && corp.contains(&format!("MCB {:.4}", corp_at_slider.brier.miscalibration)),
        "{corp}"
    );
    let cumulative = summary(&frame, "cumulative-differences-summary");
    assert!(
        cumulative.contains(&format!(
            "the KS error, its largest distance from 0, is {:.4}",
            view.estimator_case.as_ref().unwrap().estimators.ks_error
        )),
        "{cumulative}"
    );
    let classwise = summary(&frame, "classwise-summary");
    let eces: Vec<f64> = view
        .classwise_bins
        .iter()
        .map(|bins| crate::calibration::expected_calibration_error(bins))
        .collect();
    let largest = (0..eces.len())
        .max_by(|&a, &b| eces[a].total_cmp(&eces[b]))
        .unwrap();
    assert!(
        classwise.starts_with(&format!(
            "Here: class-wise ECE {:.4}, the mean of the 10 classes' ECEs; furthest off: {}",
            view.at_temperature.classwise_ece, frame.class_names[largest]
        )),
        "{classwise}"
    );
    let rivals = summary(&frame, "rivals-reliability-summary");
    for report in &answer.reports {
        let (value, text) =
            metric_patch_in_rows(&frame, &format!("rival_{}_ece", serde_name(report.method)));
        assert_eq!(value, Some(report.ece));
        assert!(
            rivals.contains(&format!("{} {text}", report.method.title())),
            "{rivals}"
        );
    }
    let conformal = frame.conformal.as_ref().unwrap();
    let stratified = summary(&frame, "stratified-summary");
    for stratum in &conformal.metrics.size_stratified {
        if let (Some(coverage), true) = (stratum.coverage, stratum.count > 0) {
            let figures = format!(
                "{} ({} sets)",
                percent(coverage, 2),
                crate::text::grouped(stratum.count)
            );
            assert!(stratified.contains(&figures), "{stratified}");
        }
    }
    let sweep = summary(&frame, "sweep-summary");
    let current = conformal
        .sweep
        .iter()
        .find(|p| (p.alpha - state.alpha).abs() < 1e-9)
        .unwrap();
    assert!(
        sweep.contains(&format!(
            "α = {:.2} (current): coverage {}, {:.3} labels",
            state.alpha,
            percent(current.coverage, 2),
            current.average_set_size
        )),
        "{sweep}"
    );

    // The shift lab: the diagram's summary waits for the shown severity, then gives it.
    let rows = 400;
    let mut lab = lab_with_logits(rows, rows);
    let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), rows);
    let visible = Visible {
        shift: true,
        ..Visible::default()
    };
    for recalibrate in [false, true] {
        let state = PageState {
            recalibrate,
            ..PageState::from_hash("shift=blur&severity=2").0
        };
        let mut frame_of = |shifts: &mut ShiftStore| {
            render(
                LabData::Bundled {
                    lab: &mut lab,
                    store: &mut store(),
                    shifts,
                },
                &state,
                &visible,
            )
            .unwrap()
        };
        if !recalibrate {
            let frame = frame_of(&mut shifts);
            assert_eq!(summary(&frame, "shift-reliability-summary"), "");
            let clean = &frame.shift.as_ref().unwrap().clean().unwrap().kept;
            assert_eq!(
                summary(&frame, "shift-severity-summary"),
                format!(
                    "Only severity 0 is evaluated so far: accuracy {}, ECE {:.4}, coverage {}.",
                    percent(clean.accuracy, 2),
                    clean.ece,
                    percent(clean.coverage, 2)
                )
            );
            let set = crate::lab::ShiftedSet::parse("shift-blur-2").unwrap();
            shifts
                .add_logits(0, set, 0, &every_row_wrong(rows))
                .unwrap();
        }
        let frame = frame_of(&mut shifts);
        let point = frame.shift.as_ref().unwrap().current().unwrap();
        let shown = if recalibrate {
            &point.refit
        } else {
            &point.kept
        };
        let (_, temperature) = metric_patch(
            &frame.readouts.patches,
            if recalibrate {
                "shift_refit_temperature"
            } else {
                "shift_kept_temperature"
            },
        );
        assert_eq!(
            summary(&frame, "shift-reliability-summary"),
            format!(
                "Here, on severity 2 of Gaussian blur (σ = 1.0 px), T = {temperature} {}: \
                 accuracy {}, ECE {:.4}.",
                if recalibrate {
                    "refitted on these images"
                } else {
                    "kept from the clean images"
                },
                percent(shown.accuracy, 2),
                shown.ece
            )
        );
        let severities = summary(&frame, "shift-severity-summary");
        assert!(
            severities.starts_with("From severity 0 to 2 (the highest evaluated so far)")
                && severities.contains(&format!(
                    "refitted {} → {}.",
                    percent(frame.shift.as_ref().unwrap().points[0].refit.coverage, 2),
                    percent(point.refit.coverage, 2)
                )),
            "{severities}"
        );
    }

    // The τ lab: empty while the chosen network's logits arrive, then its numbers.
    let (mut lab, mut store) = tau_lab();
    let visible = tau_lab_on_screen();
    let state = PageState::default();
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    for id in ["ood-roc-summary", "ood-norms-summary", "tau-chart-summary"] {
        assert_eq!(summary(&frame, id), "", "#{id} while logits arrive");
    }
    let (chosen, ce) = (state.tau.index().unwrap(), Network::Ce.index().unwrap());
    complete_the_tau_lab(&mut lab, &mut store, chosen, ce);
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    let roc = summary(&frame, "ood-roc-summary");
    for (network, suffix) in [(Network::Ce, "_ce"), (state.tau, "")] {
        let (_, auroc) = metric_patch_in_rows(&frame, &format!("auroc_energy{suffix}"));
        let (_, fpr95) = metric_patch_in_rows(&frame, &format!("fpr95_energy{suffix}"));
        assert!(
            roc.contains(&format!("{} AUROC {auroc}, FPR95 {fpr95}", network.title())),
            "{roc}"
        );
    }
    let norms = summary(&frame, "ood-norms-summary");
    let (_, id_norm) = metric_patch(&frame.readouts.patches, "logit_norm_id");
    let (_, ood_norm) = metric_patch(&frame.readouts.patches, "logit_norm_ood");
    assert_eq!(
        norms,
        format!(
            "Here, for {}: mean ‖z‖ {id_norm} on Fashion-MNIST and {ood_norm} on {}.",
            state.tau.title(),
            OodSet::Mnist.title()
        )
    );
    let points = &frame.ood.as_ref().unwrap().tau_points;
    let lowest = points
        .iter()
        .min_by(|a, b| a.fpr95.total_cmp(&b.fpr95))
        .unwrap();
    let tau = summary(&frame, "tau-chart-summary");
    assert!(
        tau.starts_with("Lowest FPR95 so far by energy at T = ")
            && tau.contains(&format!("{:.3}.", lowest.fpr95)),
        "{tau}"
    );
}

#[test]
fn the_normalised_temperature_table_asks_for_each_evaluated_network_then_shows_its_answer() {
    let (mut lab, mut store) = tau_lab();
    let state = PageState::default();
    let evaluated = [Network::Ce, Network::Tau1].map(|n| n.index().unwrap());
    let test: Vec<f32> = (0..lab.rows())
        .flat_map(|i| (0..NUM_CLASSES).map(move |k| if k == i % 3 { 2.0 } else { 0.0 }))
        .collect();
    for model in evaluated {
        lab.add_logits(model, 0, &test).unwrap();
    }
    let frame = ood_frame(&mut lab, &mut store, &state, &tau_lab_on_screen());
    let requests = &frame.readouts.normalized_requests;
    for model in evaluated {
        assert!(requests.iter().any(|r| r.model == model), "{requests:?}");
    }
    assert!(requests
        .iter()
        .all(|r| lab.complete_logits(r.model).unwrap().is_some()));
    let rows = table_rows(&frame.readouts.patches, "normalized-table");
    assert_eq!(rows.len(), Network::trained().len());
    let lesson = text_patch(&frame.readouts.patches, "normalized-lesson");
    assert!(
        lesson.starts_with("Evaluate LogitNorm τ = 0.3 ("),
        "{lesson}"
    );

    let interval = |estimate: f64| crate::bootstrap::MetricInterval {
        estimate,
        lower: estimate - 0.005,
        upper: estimate + 0.005,
    };
    let comparison = |plain_ece: f64, normalized_ece: f64| TemperatureComparison {
        temperature: 1.2,
        normalized_temperature: 0.3,
        plain: crate::bootstrap::EceNllIntervals {
            ece: interval(plain_ece),
            nll: interval(0.4),
        },
        normalized: crate::bootstrap::EceNllIntervals {
            ece: interval(normalized_ece),
            nll: interval(0.3),
        },
    };
    for request in requests {
        store.add_comparison(*request, comparison(0.05, 0.01));
    }
    let tau03 = Network::Tau03.index().unwrap();
    lab.add_logits(tau03, 0, &test).unwrap();
    let frame = ood_frame(&mut lab, &mut store, &state, &tau_lab_on_screen());
    assert_eq!(
        text_patch(&frame.readouts.patches, "normalized-lesson"),
        "Fitting both temperatures on each network, with bootstrap intervals…"
    );
    let request = NormalizedRequest {
        model: tau03,
        ..requests[0]
    };
    store.add_comparison(request, comparison(0.05, 0.045));
    let frame = ood_frame(&mut lab, &mut store, &state, &tau_lab_on_screen());
    assert!(
        frame
            .readouts
            .normalized_requests
            .iter()
            .all(|r| !evaluated.contains(&r.model) && r.model != tau03),
        "{:?}",
        frame.readouts.normalized_requests
    );
    let (value, text) = metric_patch_in_rows(&frame, "normalized_ece_normalized_1");
    assert_eq!(value, Some(0.01));
    assert_eq!(text, "0.0100 (0.0050 to 0.0150)");
    let lesson = text_patch(&frame.readouts.patches, "normalized-lesson");
    assert!(
        lesson.starts_with("Against cross-entropy's ECE after one T, 0.0500"),
        "{lesson}"
    );
    assert!(
        lesson.contains("LogitNorm τ = 0.3 has ECE 0.0500 (0.0450 to 0.0550) after one T and 0.0450 (0.0400 to 0.0500) after normalised T"),
        "{lesson}"
    );
}

#[test]
fn the_aci_block_shows_the_labs_stream_at_the_states_gamma_once_its_chart_is_on_screen() {
    let rows = 400;
    let mut lab = lab_with_logits(rows, rows);
    let mut shifts = ShiftStore::new(NUM_CLASSES, MODELS.len(), rows);
    let set = crate::lab::ShiftedSet::parse("shift-blur-2").unwrap();
    shifts
        .add_logits(0, set, 0, &every_row_wrong(rows))
        .unwrap();
    let state = PageState::from_hash("shift=blur&severity=2&aci_gamma=0.02").0;
    let frame_of = |lab: &mut Lab, shifts: &mut ShiftStore, figures: Vec<Figure>| {
        let visible = Visible {
            shift: true,
            figures,
            ..Visible::default()
        };
        render_with_shifts(lab, shifts, &state, &visible)
    };
    // Off screen, the stream is not replayed.
    let frame = frame_of(&mut lab, &mut shifts, vec![Figure::ShiftSeverity]);
    assert!(frame.adaptive.is_none());
    assert!(!frame.readouts.patches.iter().any(|p| matches!(
        p,
        Patch::Text {
            id: "aci-sentence",
            ..
        }
    )));
    let frame = frame_of(&mut lab, &mut shifts, vec![Figure::AciStream]);
    let view = lab
        .adaptive_view(
            &mut shifts,
            crate::shift::Corruption::Blur,
            &state.conformal_settings(),
            0.02,
        )
        .unwrap();
    assert_eq!(frame.adaptive.as_ref(), Some(&view));
    let severities: Vec<u8> = view.blocks.iter().map(|b| b.severity).collect();
    assert_eq!(severities, [0, 2]);
    let patches = &frame.readouts.patches;
    assert_eq!(
        metric_patch(patches, "aci_coverage").0,
        &Some(view.run.coverage)
    );
    assert_eq!(
        metric_patch(patches, "aci_fixed_coverage").0,
        &Some(view.run.fixed_coverage)
    );
    assert_eq!(
        metric_patch(patches, "aci_set_size").0,
        &Some(view.run.average_set_size)
    );
    assert_eq!(
        metric_patch(patches, "aci_fixed_set_size").0,
        &Some(view.run.fixed_average_set_size)
    );
    assert_eq!(
        metric_patch(patches, "aci_final_alpha").0,
        &Some(view.run.steps.last().unwrap().alpha)
    );
    assert_eq!(metric_patch(patches, "aci_images").1, "200");
    assert_eq!(text_patch(patches, "aci-sentence"), view.sentence);
    let summary = text_patch(patches, "aci-stream-summary");
    assert!(
        summary.starts_with(&format!(
            "After the last image, coverage since the start is {} with ACI and {} with q̂ fixed",
            percent(view.run.coverage, 1),
            percent(view.run.fixed_coverage, 1)
        )),
        "{summary}"
    );
    assert_eq!(text_patch(patches, "aci-gamma-value"), "0.02");
    assert!(patches.iter().any(|p| matches!(p,
        Patch::Control { id: "aci-gamma", value, .. } if value == "0.02")));
    // The figure draws from the frame, and its CSV carries each step of the stream.
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    let steps = csv_rows(&figure::csv(Figure::AciStream, &sources).unwrap());
    assert_eq!(steps.len(), 1 + view.rows.len());
    assert_eq!(&steps[0][..3], ["step", "test_row", "severity"]);
    assert_eq!(steps[1][1], view.rows[0].to_string());
    assert_eq!(steps[200][2], "2", "the last block is severity 2");
    assert_eq!(
        steps[200][3].parse::<f64>().unwrap(),
        view.run.steps[199].alpha
    );
    let mut svg = String::new();
    figure::render_on(
        Figure::AciStream,
        &sources,
        plotters::prelude::SVGBackend::with_string(&mut svg, (600, 400)),
        &crate::plot::ChartStyle::default(),
    )
    .unwrap();
    assert!(svg.starts_with("<svg"));
    // The frame's figure list draws it; before the clean logits are in it waits.
    assert_eq!(
        frame_figures(&frame, &[Figure::AciStream]),
        [(Figure::AciStream, FrameDrawing::Draw)]
    );
}

/// The p-values block of the τ lab: it waits, with "—", for the chosen network's logits, then
/// shows the outlier test of the evaluation half and the digits `mixed_rows` draws against the
/// calibration half, at the state's level and share; its sliders, its chart and its CSV.
#[test]
fn the_pvalues_block_waits_then_tests_the_evaluation_half_and_mixed_digits() {
    use crate::lab::ood_view::ScoreKind as OodScore;
    use crate::ood_pvalues;
    let (mut lab, mut store) = tau_lab();
    let state = PageState::default()
        .set("fdr", "0.2")
        .and_then(|s| s.set("ood_share", "0.05"))
        .unwrap();
    let visible = Visible {
        figures: vec![Figure::OodPvalues],
        ..tau_lab_on_screen()
    };
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    let patches = &frame.readouts.patches;
    assert!(frame.pvalues.is_none());
    assert_eq!(
        metric_patch(patches, "pvalue_discoveries"),
        (&None, &"—".to_string())
    );
    assert!(text_patch(patches, "pvalue-sentence").starts_with("The p-values wait for LogitNorm"));
    assert_eq!(frame_figures(&frame, &[Figure::OodPvalues]), []);

    let chosen = state.tau.index().unwrap();
    let ce = Network::Ce.index().unwrap();
    let (test, digits) = complete_the_tau_lab(&mut lab, &mut store, chosen, ce);
    let frame = ood_frame(&mut lab, &mut store, &state, &visible);
    let patches = &frame.readouts.patches;
    let PvalueFrame { view, set } = frame.pvalues.as_ref().unwrap();
    assert_eq!((view.kind, *set), (OodScore::Energy, OodSet::Mnist));
    // As `calibra ood --pvalues --ood-share 0.05 --fdr 0.2` computes it on the same logits.
    let energy = |values: &[f32]| {
        crate::ood::energy_score(
            &crate::calibration::Logits::new(values, NUM_CLASSES).unwrap(),
            1.0,
        )
        .unwrap()
    };
    let (scores, digit_scores) = (energy(&test), energy(&digits));
    let (mut calibration, mut tested) = (Vec::new(), Vec::new());
    for (&score, &flag) in scores.iter().zip(lab.calibration_flags()) {
        if flag {
            calibration.push(score)
        } else {
            tested.push(score)
        }
    }
    let rows = ood_pvalues::mixed_rows(digits.len() / NUM_CLASSES, tested.len(), 0.05, 0).unwrap();
    let mixed: Vec<f64> = rows.iter().map(|&row| digit_scores[row]).collect();
    let expected = ood_pvalues::outlier_test(&calibration, &tested, &mixed, 0.2).unwrap();
    assert_eq!(view.test, expected);
    // 0.05 · 150 / 0.95 rounds to 8 digits.
    assert_eq!(
        (expected.n_in_distribution, expected.n_out_of_distribution),
        (150, 8)
    );
    assert_eq!(
        metric_patch(patches, "pvalue_discoveries").0,
        &Some(expected.discoveries as f64)
    );
    assert_eq!(
        metric_patch(patches, "pvalue_power").0,
        &Some(expected.power)
    );
    assert_eq!(
        metric_patch(patches, "pvalue_fdr_bound").0,
        &Some(0.2 * 150.0 / 158.0)
    );
    let sentence = text_patch(patches, "pvalue-sentence");
    assert!(
        sentence.starts_with("Each of the 150 test images and 8 MNIST digits"),
        "{sentence}"
    );
    assert!(text_patch(patches, "pvalue-chart-summary").contains("158 p-values by energy"));
    assert_eq!(text_patch(patches, "ood-fdr-value"), "20%");
    assert!(patches.iter().any(|p| matches!(p,
        Patch::Control { id: "ood-share", value, valuetext: Some(spoken) }
            if value == "0.05" && spoken == "OOD share 5%")));
    assert_eq!(
        frame_figures(&frame, &[Figure::OodPvalues]),
        [(Figure::OodPvalues, FrameDrawing::Draw)]
    );
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    assert!(svg(Figure::OodPvalues, &sources)
        .unwrap()
        .contains("BH line, q = 20%"));
    let table = csv_rows(&figure::csv(Figure::OodPvalues, &sources).unwrap());
    assert_eq!(
        table[0],
        [
            "rank",
            "pvalue",
            "out_of_distribution",
            "bh_line",
            "declared_ood"
        ]
    );
    assert_eq!(table.len(), 1 + 158);
    let declared = table[1..].iter().filter(|row| row[4] == "1").count();
    assert_eq!(declared, expected.discoveries);
}

#[test]
fn the_worst_slab_measurement_writes_the_labs_numbers_and_the_settings_measured() {
    let mut lab = lab_with_logits(1_000, 1_000);
    let state = PageState::default()
        .set("mondrian", "1")
        .and_then(|s| s.set("alpha", "0.2"))
        .unwrap();
    let view = lab.worst_slab_view(&state.conformal_settings()).unwrap();
    let patches = worst_slab_readouts(&view).patches;
    let f = view.figures;
    assert_eq!(
        metric_patch(&patches, "worst_slab_coverage").0,
        &Some(f.coverage)
    );
    assert_eq!(metric_patch(&patches, "worst_slab_floor").0, &Some(f.floor));
    assert_eq!(
        metric_patch(&patches, "worst_slab_floor_spread").0,
        &Some(f.floor_spread)
    );
    assert_eq!(
        metric_patch(&patches, "worst_slab_rows").0,
        &Some(f.rows as f64)
    );
    assert_eq!(text_patch(&patches, "worst-slab-sentence"), view.sentence);
    assert_eq!(
        text_patch(&patches, "worst-slab-summary"),
        format!(
            "Measured at α = 0.20, {}, T = {:.3}, Mondrian thresholds.",
            readouts::score_name(state.score),
            state.t
        )
    );
}

#[test]
fn the_threshold_methods_table_shows_the_views_three_methods_and_its_clusters() {
    let mut lab = lab_with_logits(2_000, 2_000);
    let state = PageState::default();
    let frame = render_bundled(&mut lab, &state, &all()).unwrap();
    let patches = &frame.readouts.patches;
    let view = lab
        .conformal_view(&state.conformal_settings(), ConformalParts::ALL)
        .unwrap();
    let methods = view.threshold_methods.as_ref().unwrap();
    for (name, method) in ["marginal", "mondrian", "clustered"]
        .iter()
        .zip(&methods.methods)
    {
        for (column, value) in [
            ("coverage", method.coverage),
            ("average_set_size", method.average_set_size),
            ("covgap", method.covgap),
            ("lowest_class", method.lowest_class_coverage),
        ] {
            assert_eq!(
                metric_patch(patches, &format!("method_{name}_{column}")).0,
                &Some(value),
                "{name} {column}"
            );
        }
    }
    // The marginal row is the lab's own sets without the Mondrian switch.
    assert_eq!(methods.methods[0].coverage, view.metrics.coverage);
    assert_eq!(
        metric_patch(patches, "covgap_floor_spread").0,
        &Some(methods.covgap_floor_spread)
    );
    assert_eq!(
        text_patch(patches, "threshold-methods-sentence"),
        methods.sentence
    );
    let clusters = text_patch(patches, "clustered-clusters");
    assert!(
        clusters.starts_with("Cluster 1: ") || clusters.starts_with("In no cluster"),
        "{clusters}"
    );
    assert!(clusters.ends_with('.'));
}

/// start-workers.js asks for the weights of the network a link without a `model` key shows
/// before the page's module has read the link: the network its script tag names is the default
/// state's, at that network's path.
#[test]
fn the_weights_asked_for_before_the_page_reads_its_link_are_the_default_networks() {
    let html = include_str!("../../www/index.html");
    let tag = html
        .split("<script src=\"start-workers.js\"")
        .nth(1)
        .and_then(|rest| rest.split('>').next())
        .expect("index.html loads start-workers.js");
    let attribute = |name: &str| {
        tag.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("start-workers.js's tag has {name}: {tag}"))
    };
    let model = PageState::default().model;
    assert_eq!(attribute("data-model"), crate::text::serde_name(model));
    assert_eq!(attribute("data-weights"), MODELS[model.index()].url);
}
