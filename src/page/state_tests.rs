//! The page state against hand-written hashes: defaults, ranges, messages and round trips.

use super::*;
use crate::page::Figure;

const DEFAULT_HASH: &str = "model=ce&t=1&bins=15&binning=width&split=0&alpha=0.1&score=aps\
&randomized=1&raps_lambda=0.1&k_reg=1&saps_lambda=0.2&mondrian=0&gallery=all&tau=0.04&ood=mnist\
&ood_score=energy&shift=rotation&severity=3&recalibrate=0&paper=0&embed=none&present=0\
&delta=0.1&risk=0.03&mistake_evaluation_half=0&mistake_probabilities=0&mistake_minimise_ece=0\
&aci_gamma=0.005&fdr=0.1&ood_share=0.1";

fn messages(rejected: &[Rejected]) -> Vec<String> {
    rejected.iter().map(ToString::to_string).collect()
}

#[test]
fn the_default_state_writes_an_empty_link_and_reads_every_key_back() {
    let state = PageState::default();
    assert_eq!(state.to_hash(), "");
    assert_eq!(PageState::from_hash(DEFAULT_HASH), (state.clone(), vec![]));
    assert_eq!(PageState::from_hash(""), (state.clone(), vec![]));
    assert_eq!(PageState::from_hash("#"), (state, vec![]));
}

#[test]
fn a_link_carries_only_the_fields_that_differ_from_the_defaults() {
    let defaults = PageState::default().hash_entries();
    for (index, field) in FIELDS.iter().enumerate() {
        let default = &defaults[index].1;
        let other = match field.kind {
            FieldKind::Flag => (if default == "1" { "0" } else { "1" }).to_string(),
            FieldKind::Number(range) if format!("{}", range.min) == *default => {
                format!("{}", range.max)
            }
            FieldKind::Number(range) => format!("{}", range.min),
            FieldKind::Steps => field.steps().into_iter().find(|s| s != default).unwrap(),
            FieldKind::Choice => match field.key {
                "model" => "logitnorm",
                "binning" => "mass",
                "score" => "lac",
                "gallery" => "misses",
                "ood" => "uniform",
                "ood_score" => "msp",
                "shift" => "blur",
                "embed" => "reliability",
                "case" => "base_rate",
                key => panic!("no other value of {key} in this test"),
            }
            .to_string(),
        };
        let state = PageState::default().set(field.key, &other).unwrap();
        let expected = form_urlencoded::Serializer::new(String::new())
            .append_pair(field.key, &state.hash_entries()[index].1)
            .finish();
        assert_eq!(state.to_hash(), expected, "{} = {other}", field.key);
        assert_eq!(PageState::from_hash(&expected), (state, vec![]));
    }
}

#[test]
fn the_field_table_names_every_field_of_the_state_in_order() {
    let keys: Vec<&str> = FIELDS.iter().map(|f| f.key).collect();
    let serialized = serde_json::to_string(&PageState::default()).unwrap();
    let mut positions: Vec<usize> = keys
        .iter()
        .map(|k| serialized.find(&format!("\"{k}\":")).unwrap())
        .collect();
    assert_eq!(keys.len(), fields_of(&PageState::default()).len());
    let sorted = {
        let mut p = positions.clone();
        p.sort_unstable();
        p
    };
    assert_eq!(
        positions, sorted,
        "FIELDS lists the keys in the struct's order"
    );
    positions.dedup();
    assert_eq!(positions.len(), keys.len());
}

#[test]
fn a_partial_hash_sets_its_keys_and_keeps_the_defaults() {
    let (state, rejected) =
        PageState::from_hash("#t=2.5&bins=20&binning=mass&split=3&score=raps&mondrian=1");
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(
        state,
        PageState {
            t: 2.5,
            bins: 20,
            binning: Binning::Mass,
            split: 3,
            score: ScoreKind::Raps,
            mondrian: true,
            ..PageState::default()
        }
    );
    // Percent-encoding and '+' are read as a browser's URLSearchParams writes them.
    assert_eq!(PageState::from_hash("t=2%2E5").0.t, 2.5);
}

#[test]
fn each_bad_entry_is_ignored_with_its_reason_and_the_rest_kept() {
    let (state, rejected) = PageState::from_hash(
        "t=500&bins=3&alpha=0.2&score=foo&mondrian=2&bogus=1&k_reg=2.5&split=-1&t=abc&model=vgg",
    );
    assert_eq!(
        messages(&rejected),
        [
            "temperature \"500\" is not a number from 0.05 to 20",
            "bins \"3\" is not a whole number from 5 to 30",
            "score \"foo\" is not one of lac, aps, raps or saps",
            "Mondrian \"2\" is not 0 or 1",
            "bogus \"1\" is not a setting of this page",
            "RAPS k_reg \"2.5\" is not a whole number from 1 to 10",
            "split \"-1\" is not a whole number from 0 to 4294967295",
            "temperature \"abc\" is not a number from 0.05 to 20",
            "model \"vgg\" is not one of ce or logitnorm",
        ]
    );
    assert_eq!(
        state,
        PageState {
            alpha: 0.2,
            ..PageState::default()
        }
    );
    assert_eq!(rejected[0].key, "t");
    assert_eq!(rejected[4].key, "bogus");
}

#[test]
fn the_temperature_slider_is_log_scaled_and_every_position_round_trips() {
    let at = |position: u32| {
        PageState::default()
            .set_control("temperature", &position.to_string())
            .unwrap()
    };
    assert_eq!(at(0).t, 0.05);
    assert_eq!(at(500).t, 1.0);
    assert_eq!(at(1000).t, 20.0);
    // 0.05 · 400^(250/1000) = 0.05 · √20 = 0.2236068 (six significant digits kept).
    assert_eq!(at(250).t, 0.223607);
    for position in 0..=1000 {
        let state = at(position);
        assert_eq!(
            state.fields().slider_position("temperature"),
            Some(position.to_string())
        );
        // The state is exactly what its link says.
        assert_eq!(PageState::from_hash(&state.to_hash()).0, state);
    }
    for bad in ["1001", "-1", "x", ""] {
        let error = PageState::default()
            .set_control("temperature", bad)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("temperature \"{bad}\" is not a slider position from 0 to 1000")
        );
    }
}

#[test]
fn controls_validate_and_leave_the_state_unchanged_on_error() {
    let state = PageState::default();
    let next = state.set_control("randomized", "false").unwrap();
    assert!(!next.randomized);
    assert_eq!(state.set_control("alpha", "0.05").unwrap().alpha, 0.05);
    assert_eq!(state.set_control("k-reg", "4").unwrap().k_reg, 4);
    assert_eq!(
        state
            .set_control("gallery-filter", "extremes")
            .unwrap()
            .gallery,
        GalleryChoice::Extremes
    );
    assert_eq!(
        state.set_control("alpha", "0.5").unwrap_err().to_string(),
        "α \"0.5\" is not a number from 0.01 to 0.3"
    );
    assert_eq!(
        state.set_control("nothing", "1").unwrap_err().to_string(),
        "nothing \"1\" is not a control of this page"
    );
    assert_eq!(
        state.set_control("mondrian", "1").unwrap_err().to_string(),
        "Mondrian \"1\" is not true or false"
    );
}

#[test]
fn buttons_and_presets() {
    let state = PageState {
        t: 3.0,
        split: u32::MAX,
        score: ScoreKind::Lac,
        model: ModelKey::Logitnorm,
        ..PageState::default()
    };
    assert_eq!(state.act("reset-temperature", None).unwrap().t, 1.0);
    assert_eq!(state.act("new-split", None).unwrap().split, 0);
    assert_eq!(
        state.act("fit", Some(1.759_345_678_912_345)).unwrap().t,
        1.759_345_678_912_345
    );
    assert!(state
        .act("fit", None)
        .unwrap_err()
        .to_string()
        .contains("once inference has reached both halves"));
    // A preset shows the state its line describes: its entries on the defaults, whatever was
    // chosen before (α, Mondrian, the score), keeping only the split and the view.
    let chosen = PageState {
        alpha: 0.3,
        mondrian: true,
        bins: 7,
        embed: Embed::Figure(FIGURES[0].id),
        ..state.clone()
    };
    let on_defaults = |entries: PageState| PageState {
        split: chosen.split,
        embed: chosen.embed,
        ..entries
    };
    assert_eq!(
        chosen.act("aps_raw_cold", None).unwrap(),
        on_defaults(PageState {
            model: ModelKey::Ce,
            score: ScoreKind::Aps,
            randomized: false,
            t: 0.3,
            ..PageState::default()
        })
    );
    assert_eq!(chosen.act("aps_raw_t1", None).unwrap().t, 1.0);
    for (preset, t) in [("overconfident", 1.0), ("too_cold", 0.3)] {
        assert_eq!(
            chosen.act(preset, None).unwrap(),
            on_defaults(PageState {
                model: ModelKey::Ce,
                t,
                ..PageState::default()
            })
        );
    }
    assert_eq!(
        chosen.act("logitnorm_raw", None).unwrap(),
        on_defaults(PageState {
            model: ModelKey::Logitnorm,
            t: 1.0,
            ..PageState::default()
        })
    );
    assert_eq!(
        chosen.act("mondrian", None).unwrap(),
        on_defaults(PageState {
            score: ScoreKind::Aps,
            randomized: true,
            mondrian: true,
            ..PageState::default()
        })
    );
}

#[test]
fn switching_the_network_puts_t_back_at_one() {
    let fitted = PageState {
        model: ModelKey::Logitnorm,
        t: 0.070,
        ..PageState::default()
    };
    let back = fitted.set_control("model", "ce").unwrap();
    assert_eq!((back.model, back.t), (ModelKey::Ce, 1.0));
    // The same network again changes nothing; a link keeps its T.
    assert_eq!(fitted.set_control("model", "logitnorm").unwrap(), fitted);
    assert_eq!(PageState::from_hash("model=ce&t=0.07").0.t, 0.07);
}

#[test]
fn every_trained_network_has_its_index_and_the_slider_lists_them_in_order() {
    for (index, info) in MODELS.iter().enumerate() {
        if info.seed == 0 {
            assert_eq!(info.network.index(), Some(index));
        }
        assert!(info.network.seed_models().contains(&index));
    }
    assert_eq!(ModelKey::Ce.index(), Network::Ce.index().unwrap());
    assert_eq!(
        ModelKey::Logitnorm.index(),
        Network::Tau004.index().unwrap()
    );
    let tau = FIELDS.iter().find(|f| f.key == "tau").unwrap();
    let steps = tau.steps();
    assert_eq!(steps.len(), Network::trained().len());
    assert_eq!(
        steps.last().map(String::as_str),
        Some("ce"),
        "cross-entropy at the end"
    );
    for (position, name) in steps.iter().enumerate() {
        let state = PageState::default()
            .set_control("tau", &position.to_string())
            .unwrap();
        assert_eq!(&state.tau.name(), name);
    }
    let untrained = Network::ALL.iter().find(|n| n.index().is_none());
    if let Some(untrained) = untrained {
        let (_, rejected) = PageState::from_hash(&format!("tau={}", untrained.name()));
        assert_eq!(rejected.len(), 1, "an untrained τ is refused");
    }
}

#[test]
fn a_thousand_random_states_survive_their_link() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let choices = |key: &str| -> &'static [&'static str] {
        match key {
            "model" => &["ce", "logitnorm"],
            "binning" => &["width", "mass"],
            "score" => &["lac", "aps", "raps", "saps"],
            "ood" => &["mnist", "gaussian", "uniform"],
            "ood_score" => &[
                "msp",
                "max_logit",
                "energy",
                "odin",
                "mahalanobis",
                "knn",
                "react",
                "ash",
                "vim",
                "gradnorm",
            ],
            "embed" => &[
                "none",
                "reliability",
                "sweep",
                "shift-severity",
                "tau-chart",
            ],
            "shift" => &[
                "rotation",
                "blur",
                "noise",
                "contrast",
                "translation",
                "inversion",
            ],
            "case" => &[
                "network",
                "confidence_one",
                "empty_bins",
                "base_rate",
                "hundred_images",
            ],
            _ => &["all", "misses", "large", "empty", "extremes"],
        }
    };
    for _ in 0..1000 {
        let mut state = PageState::default();
        for field in &FIELDS {
            let raw = match field.kind {
                FieldKind::Choice => {
                    let options = choices(field.key);
                    options[rng.random_range(0..options.len())].to_string()
                }
                FieldKind::Flag => (if rng.random() { "1" } else { "0" }).to_string(),
                FieldKind::Steps => {
                    let steps = field.steps();
                    steps[rng.random_range(0..steps.len())].clone()
                }
                FieldKind::Number(range) if range.integer => {
                    (rng.random_range(range.min as u64..=range.max as u64)).to_string()
                }
                FieldKind::Number(range) => {
                    format!("{}", rng.random_range(range.min..=range.max))
                }
            };
            state = state.set(field.key, &raw).unwrap();
        }
        let (read, rejected) = PageState::from_hash(&state.to_hash());
        assert!(rejected.is_empty());
        assert_eq!(read, state);
    }
}

#[test]
fn the_embed_view_names_a_figure_or_none() {
    let (state, rejected) = PageState::from_hash("embed=smooth-reliability&t=2");
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(state.embed, Embed::Figure(Figure::SmoothReliability));
    assert_eq!(state.to_hash(), "t=2&embed=smooth-reliability");
    let (state, rejected) = PageState::from_hash("embed=pie-chart");
    assert_eq!(state.embed, Embed::None);
    assert_eq!(rejected.len(), 1);
    let message = rejected[0].to_string();
    assert!(
        message.starts_with("embed \"pie-chart\" is not none or a figure: reliability, histogram,"),
        "{message}"
    );
}

#[test]
fn presentation_mode_steps_through_every_figure_and_back_out() {
    let start = PageState {
        t: 0.3,
        ..PageState::default()
    };
    let shown = start.act("present", None).unwrap();
    assert!(shown.present);
    assert_eq!(shown.embed, Embed::Figure(Figure::Reliability));
    assert_eq!(shown.t, 0.3, "the reader's settings stay");
    let mut state = shown.clone();
    let mut seen = Vec::new();
    for _ in 0..crate::page::FIGURES.len() {
        let Embed::Figure(figure) = state.embed else {
            panic!("no figure shown")
        };
        seen.push(figure);
        state = state.act("next-figure", None).unwrap();
    }
    assert_eq!(state, shown, "round the end, back to the first");
    let listed: Vec<Figure> = crate::page::FIGURES.iter().map(|f| f.id).collect();
    assert_eq!(seen, listed);
    let last = shown.act("previous-figure", None).unwrap();
    assert_eq!(last.embed, Embed::Figure(Figure::OodPvalues));
    let out = last.act("end-presentation", None).unwrap();
    assert_eq!((out.present, out.embed), (false, Embed::None));
    assert_eq!(out.t, 0.3);
}

#[test]
fn inversion_is_on_or_off_and_a_corruption_change_keeps_a_severity_it_has() {
    let (state, rejected) = PageState::from_hash("shift=inversion&severity=4");
    assert!(rejected.is_empty());
    assert_eq!((state.shift, state.severity), (Corruption::Inversion, 1));
    let rotated = PageState::default().set_control("severity", "5").unwrap();
    assert_eq!(rotated.severity, 5);
    let inverted = rotated
        .set_control("shift-corruption", "inversion")
        .unwrap();
    assert_eq!(inverted.severity, 1);
    assert_eq!(inverted.to_hash(), "shift=inversion&severity=1");
    let (state, rejected) = PageState::from_hash("severity=6&shift=tilt");
    assert_eq!(state.severity, 3);
    assert_eq!(
        messages(&rejected),
        [
            "severity \"6\" is not a whole number from 0 to 5",
            "corruption \"tilt\" is not one of rotation, blur, noise, contrast, translation or \
             inversion",
        ]
    );
}

/// Every slider's range, as the page gives it to its element, holds exactly the positions its
/// control accepts: each step from min to max sets the state, and one step past either end is
/// refused. (The τ slider once had no range: the browser's 0 to 100 let a click, End or Page Up
/// ask for positions past the seven networks.)
#[test]
fn every_slider_range_holds_exactly_the_positions_its_control_accepts() {
    let ranges: Vec<SliderRange> = FIELDS.iter().filter_map(Field::slider_range).collect();
    for control in ["temperature", "tau", "alpha", "bins", "severity"] {
        assert!(
            ranges.iter().any(|range| range.control == control),
            "{control} has no slider range"
        );
    }
    for range in ranges {
        // The browser writes a position as min + i·step in the step's decimals.
        let decimals = (-range.step.log10()).ceil().max(0.0) as usize;
        let position = |i: f64| format!("{:.*}", decimals, range.min + i * range.step);
        let steps = ((range.max - range.min) / range.step).round();
        for i in 0..=steps as usize {
            let raw = position(i as f64);
            assert!(
                PageState::default()
                    .set_control(range.control, &raw)
                    .is_ok(),
                "{} refuses {raw}, inside its slider's range",
                range.control
            );
        }
        for raw in [position(-1.0), position(steps + 1.0)] {
            assert!(
                PageState::default()
                    .set_control(range.control, &raw)
                    .is_err(),
                "{} accepts {raw}, outside its slider's range",
                range.control
            );
        }
    }
}

/// A bad choice in a link is refused in the reader's words, for every choice field: never
/// serde's wording ("unknown variant", backticks, "is not valid").
#[test]
fn every_choice_field_refuses_in_the_readers_words() {
    for field in FIELDS.iter().filter(|f| f.kind == FieldKind::Choice) {
        let rejected = PageState::default().set(field.key, "nonsense").unwrap_err();
        let message = rejected.to_string();
        assert!(
            message.contains("is not one of") || message.contains("is not none or a figure"),
            "{message}"
        );
        for serde_words in ["unknown variant", "`", "is not valid"] {
            assert!(!message.contains(serde_words), "{message}");
        }
    }
}

#[test]
fn every_sliders_position_is_read_back_from_the_field_table() {
    let sliders: Vec<SliderRange> = FIELDS.iter().filter_map(Field::slider_range).collect();
    assert!(sliders.len() >= 8, "{sliders:?}");
    for range in sliders {
        let steps = ((range.max - range.min) / range.step).round() as usize;
        for index in [0, steps / 3, steps / 2, steps] {
            let raw = range.min + index as f64 * range.step;
            // The position as the element's value would give it (0.07, not 0.07000000000000001).
            let raw = format!("{}", (raw * 1e6).round() / 1e6);
            let state = PageState::default()
                .set_control(range.control, &raw)
                .unwrap();
            assert_eq!(
                state.fields().slider_position(range.control).as_deref(),
                Some(raw.as_str()),
                "{}",
                range.control
            );
        }
    }
    assert_eq!(PageState::default().fields().slider_position("score"), None);
}

#[test]
fn the_aci_step_round_trips_its_link_and_its_slider_comes_from_the_table() {
    let state = PageState::default().set("aci_gamma", "0.02").unwrap();
    assert_eq!(state.to_hash(), "aci_gamma=0.02");
    assert_eq!(
        PageState::from_hash(&state.to_hash()),
        (state.clone(), vec![])
    );
    let back = state.set_control("aci-gamma", "0.005").unwrap();
    assert_eq!(back, PageState::default());
    let range = FIELDS
        .iter()
        .find(|f| f.key == "aci_gamma")
        .and_then(Field::slider_range)
        .unwrap();
    assert_eq!(
        (range.control, range.min, range.max, range.step),
        ("aci-gamma", 0.001, 0.05, 0.001)
    );
    let (_, rejected) = PageState::from_hash("aci_gamma=0.5");
    assert_eq!(rejected.len(), 1);
    assert!(
        rejected[0].to_string().starts_with("γ \"0.5\""),
        "{}",
        rejected[0]
    );
}

#[test]
fn the_fdr_level_and_ood_share_round_trip_their_link_and_refuse_what_is_out_of_range() {
    let moved = PageState::default()
        .set_control("ood-fdr", "0.2")
        .unwrap()
        .set_control("ood-share", "0.25")
        .unwrap();
    let hash = moved.to_hash();
    assert_eq!(hash, "fdr=0.2&ood_share=0.25");
    let (read, rejected) = PageState::from_hash(&hash);
    assert!(rejected.is_empty());
    assert_eq!((read.fdr, read.ood_share), (0.2, 0.25));
    let (_, rejected) = PageState::from_hash("fdr=0&ood_share=0.9");
    assert_eq!(
        messages(&rejected),
        [
            "FDR level \"0\" is not a number from 0.01 to 0.5",
            "OOD share \"0.9\" is not a number from 0.01 to 0.5"
        ]
    );
}
