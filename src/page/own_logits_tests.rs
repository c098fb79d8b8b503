//! The reader's files as people write them, the labs on them against the calibration and
//! conformal functions called directly on the same split (what `calibra report` does), and
//! each bad file's message.

use super::*;
use crate::calibration::{self, Binning, Logits};
use crate::conformal::{self, Score};
use crate::data;
use crate::page::readouts::Patch;
use crate::page::{render, LabData, PageState, Visible};

const ROWS: usize = 400;
const K: usize = 3;

/// Row i: class i mod 3 is favoured by an amount that varies with i, so the network is right
/// most of the time, wrong some of the time, and not calibrated.
fn logits_row(i: usize) -> [f32; K] {
    let mut row = [0.1 * (i % 7) as f32, -0.2, 0.05 * (i % 5) as f32];
    let favoured = if i.is_multiple_of(4) {
        (i + 1) % K
    } else {
        i % K
    };
    row[favoured] += 1.5 + (i % 11) as f32 * 0.3;
    row
}

/// The logits as `np.savetxt(..., delimiter=",", header=...)` writes them, the labels as
/// `np.savetxt` writes integers saved as floats.
fn csv_files() -> (String, String) {
    let mut logits = "# cat,dog,bird\n".to_string();
    let mut labels = String::new();
    for i in 0..ROWS {
        let row = logits_row(i);
        logits.push_str(&format!(
            "{:.18e},{:.18e},{:.18e}\n",
            row[0], row[1], row[2]
        ));
        labels.push_str(&format!("{:.18e}\n", (i % K) as f64));
    }
    (logits, labels)
}

fn file<'a>(name: &'a str, bytes: &'a [u8]) -> OwnFile<'a> {
    OwnFile { name, bytes }
}

/// The files read as the inference worker reads them, then made a lab as the page makes it.
fn load(logits: OwnFile, labels: OwnFile, names: Option<OwnFile>) -> Result<Lab, OwnLogitsError> {
    lab(read(logits, labels, names)?)
}

/// The CSV files with their class names, as the inference worker reads them.
fn csv_table() -> OwnTable {
    let (logits, labels) = csv_files();
    read(
        file("model.csv", logits.as_bytes()),
        file("labels.txt", labels.as_bytes()),
        Some(file("names.txt", b"cat\ndog\nbird\n")),
    )
    .unwrap()
}

fn loaded() -> Lab {
    lab(csv_table()).unwrap()
}

const BOTH_LABS: Visible = Visible {
    temperature: true,
    conformal: true,
    gallery: true,
    ood: true,
    shift: false,
    own_image: false,
    explain: Some(3),
    figures: Vec::new(),
    blocks: Vec::new(),
};

#[test]
fn csv_logits_with_float_labels_and_names_load() {
    let own = loaded();
    assert_eq!(own.rows(), ROWS);
    assert_eq!(own.class_names(), ["cat", "dog", "bird"]);
    assert_eq!(
        csv_table().about.description,
        "400 rows of 3 classes: logits from model.csv, labels from labels.txt, the classes named in names.txt"
    );
    let unnamed = load(
        file("model.csv", csv_files().0.as_bytes()),
        file("labels.txt", csv_files().1.as_bytes()),
        None,
    )
    .unwrap();
    assert_eq!(unnamed.class_names(), ["class 0", "class 1", "class 2"]);
}

#[test]
fn the_labs_equal_the_functions_the_command_line_tool_calls_on_the_same_split() {
    let mut own = loaded();
    let state = PageState {
        split: 7,
        t: 1.3,
        bins: 10,
        binning: Binning::Width,
        ..PageState::default()
    };
    let frame = render(LabData::Own(&mut own), &state, &BOTH_LABS).unwrap();
    // What `calibra report --seed 7` computes: the seeded split, T fitted on the calibration
    // part, the metrics and conformal sets on the other.
    let all: Vec<f32> = (0..ROWS).flat_map(logits_row).collect();
    let labels: Vec<u32> = (0..ROWS).map(|i| (i % K) as u32).collect();
    let (calibration_rows, test_rows) = data::seeded_split(ROWS, 0.5, 7);
    let pick = |rows: &[usize]| -> (Vec<f32>, Vec<u32>) {
        let logits = rows
            .iter()
            .flat_map(|&i| all[i * K..(i + 1) * K].to_vec())
            .collect();
        (logits, rows.iter().map(|&i| labels[i]).collect())
    };
    let (cal_logits, cal_labels) = pick(&calibration_rows);
    let (test_logits, test_labels) = pick(&test_rows);
    let cal = Logits::new(&cal_logits, K).unwrap();
    let test = Logits::new(&test_logits, K).unwrap();
    let fit = calibration::fit_temperature(&cal, &cal_labels).unwrap();
    let view = frame.temperature.expect("the temperature lab is computed");
    assert_eq!(view.fitted_temperature, fit.temperature);
    let expected = calibration::evaluate(&test, &test_labels, 1.3, 10, Binning::Width).unwrap();
    assert_eq!(view.at_temperature.ece, expected.ece);
    assert_eq!(view.at_temperature.nll, expected.nll);
    assert_eq!(view.at_temperature.accuracy, expected.accuracy);
    assert_eq!(view.classwise_bins.len(), K);

    let draws = conformal::uniforms(ROWS, 7);
    let draw = |rows: &[usize]| rows.iter().map(|&i| draws[i]).collect::<Vec<f64>>();
    let settings = state.conformal_settings();
    let report = conformal::split_conformal(
        &calibration::softmax(&cal, 1.3).unwrap(),
        &cal_labels,
        &calibration::softmax(&test, 1.3).unwrap(),
        &test_labels,
        K,
        &Score::Aps { randomized: true },
        settings.alpha,
        conformal::ThresholdRule::Marginal,
        &draw(&calibration_rows),
        &draw(&test_rows),
    )
    .unwrap();
    let sets = frame.conformal.expect("the conformal lab is computed");
    assert_eq!(sets.qhat[0], report.qhat[0]);
    assert_eq!(sets.metrics.coverage, report.metrics.coverage);
    assert_eq!(sets.metrics.per_class_coverage.len(), K);
    // The labs that need the test images are left out, whatever `visible` asks.
    assert!(frame.ood.is_none());
    assert!(frame.readouts.gallery.is_none());
    assert!(frame.readouts.explanation.is_none());
    assert_eq!(frame.class_names, ["cat", "dog", "bird"]);
    // The line under each lab counts the reader's rows, never "test images".
    let line = frame.readouts.patches.iter().find_map(|patch| match patch {
        Patch::Text { id, text } if *id == "temperature-provisional" => Some(text.as_str()),
        _ => None,
    });
    assert_eq!(line, Some("Computed on all 400 rows of your files."));
}

/// The message of loading these files.
fn refusal(logits: (&str, &[u8]), labels: (&str, &[u8]), names: Option<(&str, &[u8])>) -> String {
    load(
        file(logits.0, logits.1),
        file(labels.0, labels.1),
        names.map(|(name, bytes)| file(name, bytes)),
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn each_bad_file_is_named_with_what_is_wrong() {
    let (logits, labels) = csv_files();
    let (logits, labels) = (logits.as_bytes(), labels.as_bytes());
    assert_eq!(
        refusal(("m.csv", b"1,2\n3,x\n"), ("l.txt", b"0\n1\n"), None),
        "m.csv: line 2: 'x' is not a number"
    );
    assert_eq!(
        refusal(("m.csv", logits), ("l.txt", b"0\n1\n"), None),
        "l.txt: 2 labels, but m.csv has 400 rows"
    );
    assert_eq!(
        refusal(("m.csv", b"1,2\n3,4\n"), ("l.txt", b"0\n2\n"), None),
        "l.txt: label 2 at row 1 is outside [0, 2)"
    );
    assert_eq!(
        refusal(("m.csv", b"0.25,0.75\n0.5,0.5\n"), ("l.txt", b"0\n1\n"), None),
        "m.csv: every row is non-negative and sums to 1, so these look like probabilities, not logits"
    );
    assert_eq!(
        refusal(
            ("m.csv", logits),
            ("l.txt", labels),
            Some(("n.txt", b"cat\ndog\n"))
        ),
        "n.txt: 2 class names, but the logits have 3 classes (one name a line)"
    );
    assert_eq!(
        refusal(
            ("m.csv", logits),
            ("l.txt", labels),
            Some(("n.txt", b"cat\n \nbird"))
        ),
        "n.txt: line 2: an empty class name"
    );
    assert_eq!(
        refusal(("m.json", logits), ("l.txt", labels), None),
        "m.json: unknown file type (use .npy, .csv or .txt; labels may also be IDX: .gz, .idx, -ubyte)"
    );
    assert_eq!(
        refusal(("m.csv", b"1,2\n"), ("l.txt", b"0\n"), None),
        "m.csv: the lab needs at least 2 classes and 2 rows"
    );
}

#[test]
fn every_figure_of_both_labs_draws_for_a_hundred_classes() {
    use crate::page::figure::{self, Figure, Sources};
    const CLASSES: usize = 100;
    let mut logits = String::new();
    let mut labels = String::new();
    for i in 0..2000_usize {
        let row: Vec<String> = (0..CLASSES)
            .map(|k| {
                let favoured = if i.is_multiple_of(5) {
                    (i + 1) % CLASSES
                } else {
                    i % CLASSES
                };
                let boost = if k == favoured { 4.0 } else { 0.0 };
                format!("{}", boost + ((i * 7 + k * 13) % 17) as f64 * 0.05)
            })
            .collect();
        logits.push_str(&row.join(","));
        logits.push('\n');
        labels.push_str(&format!("{}\n", i % CLASSES));
    }
    let mut own = load(
        file("m.csv", logits.as_bytes()),
        file("l.txt", labels.as_bytes()),
        None,
    )
    .unwrap();
    let figures = vec![
        Figure::Reliability,
        Figure::Histogram,
        Figure::SmoothReliability,
        Figure::Classwise,
        Figure::RivalsReliability,
        Figure::SetSizes,
        Figure::PerClass,
        Figure::Stratified,
        Figure::Sweep,
    ];
    let visible = Visible {
        figures: figures.clone(),
        ..BOTH_LABS
    };
    let frame = render(LabData::Own(&mut own), &PageState::default(), &visible).unwrap();
    let request = frame.readouts.rivals_request.unwrap();
    let rivals = own.worker_halves().unwrap().rivals(&request).unwrap();
    // Dirichlet calibration's K(K + 1) = 10,100 parameters are not fitted: its row says so.
    assert!(rivals
        .reports
        .iter()
        .all(|report| report.method != crate::recalibration::Method::Dirichlet));
    assert!(
        rivals
            .accuracy_sentence
            .contains("Dirichlet calibration is not fitted for more than 20 classes (its matrix has K(K + 1) entries)."),
        "{}",
        rivals.accuracy_sentence
    );
    own.add_rivals(request, rivals);
    let frame = render(LabData::Own(&mut own), &PageState::default(), &visible).unwrap();
    let dirichlet_cells: Vec<&str> = frame
        .readouts
        .patches
        .iter()
        .find_map(|patch| match patch {
            Patch::Rows { id: "rivals", rows } => rows.last(),
            _ => None,
        })
        .expect("the rivals table")
        .cells
        .iter()
        .skip(1)
        .map(|cell| cell.text.as_str())
        .collect();
    assert!(
        dirichlet_cells.iter().all(|&text| text == "—"),
        "{dirichlet_cells:?}"
    );
    let sources = Sources {
        frame: &frame,
        experiment: None,
    };
    for figure in figures {
        let mut text = String::new();
        let backend = plotters::prelude::SVGBackend::with_string(&mut text, (800, 600));
        figure::render_on(
            figure,
            &sources,
            backend,
            &crate::plot::ChartStyle { scale: 1.0 },
        )
        .unwrap_or_else(|e| panic!("{figure:?}: {e}"));
        assert!(text.contains("<svg"), "{figure:?} drew");
    }
}
