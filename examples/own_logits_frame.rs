//! Measures natively what a reader's own logits cost the page, part by part: parsing the files
//! (`page::own_logits::read`, the inference worker's part) and making the lab
//! (`page::own_logits::lab`), the temperature lab's first frame and the conformal
//! lab's first frame (`page::render` with that lab on screen, its figures drawn as SVG), the
//! rivals the page's worker fits (`lab::Halves::rivals`), on
//! synthetic overconfident logits of the size given. Prints milliseconds; asserts nothing. The
//! browser's figures come from `tests/e2e/own-logits-bench.mjs`.
//!
//! `cargo run --release --example own_logits_frame -- 200000 100`

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

use calibra::page::{self, own_logits, Figure, LabData, PageState, Sources, Visible};
use calibra::plot::{self, ChartStyle};
use plotters::prelude::SVGBackend;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("own_logits_frame: {error}");
            ExitCode::from(2)
        }
    }
}

/// The benchmark's synthetic logits (the same generator as `own-logits-bench.mjs`): the true
/// class usually on top by a varying margin.
fn synthetic(rows: usize, classes: usize) -> (Vec<f32>, Vec<i32>) {
    let mut seed: u64 = 7;
    let mut random = || {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        seed as f64 / 2_147_483_648.0
    };
    let mut logits = vec![0f32; rows * classes];
    let mut labels = vec![0i32; rows];
    for i in 0..rows {
        let label = (random() * classes as f64) as usize;
        let favoured = if random() < 0.2 {
            (random() * classes as f64) as usize
        } else {
            label
        };
        for k in 0..classes {
            logits[i * classes + k] = (random() * 2.0 - 1.0) as f32;
        }
        logits[i * classes + favoured] += (2.0 + random() * 6.0) as f32;
        labels[i] = label as i32;
    }
    (logits, labels)
}

/// A version 1.0 `.npy` file of `data` (little-endian values of `descr`).
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dictionary = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let padding = (64 - (11 + dictionary.len()) % 64) % 64;
    let header = format!("{dictionary}{}\n", " ".repeat(padding));
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

fn run() -> Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<std::result::Result<_, _>>()?;
    let (rows, classes) = match args[..] {
        [rows, classes] => (rows, classes),
        _ => return Err("usage: own_logits_frame ROWS CLASSES".into()),
    };
    let (logits, labels) = synthetic(rows, classes);
    let logit_bytes: Vec<u8> = logits.iter().flat_map(|v| v.to_le_bytes()).collect();
    let label_bytes: Vec<u8> = labels.iter().flat_map(|v| v.to_le_bytes()).collect();
    let logits_file = npy("<f4", &format!("({rows}, {classes})"), &logit_bytes);
    let labels_file = npy("<i4", &format!("({rows},)"), &label_bytes);

    let started = Instant::now();
    let table = own_logits::read(
        own_logits::OwnFile {
            name: "logits.npy",
            bytes: &logits_file,
        },
        own_logits::OwnFile {
            name: "labels.npy",
            bytes: &labels_file,
        },
        None,
    )?;
    println!("read: {:.0} ms", ms(started));
    let started = Instant::now();
    let mut loaded = own_logits::lab(table)?;
    println!("lab: {:.0} ms", ms(started));

    let state = PageState::default();
    let style = ChartStyle::default();
    for (lab, figures) in [
        (
            "temperature",
            vec![
                Figure::Reliability,
                Figure::Histogram,
                Figure::SmoothReliability,
                Figure::Classwise,
            ],
        ),
        (
            "conformal",
            vec![
                Figure::SetSizes,
                Figure::PerClass,
                Figure::Stratified,
                Figure::Sweep,
            ],
        ),
    ] {
        let visible = Visible {
            temperature: lab == "temperature",
            conformal: lab == "conformal",
            figures: figures.clone(),
            ..Visible::default()
        };
        let started = Instant::now();
        let frame = page::render(LabData::Own(&mut loaded), &state, &visible)?;
        let computed = ms(started);
        let sources = Sources {
            frame: &frame,
            experiment: None,
        };
        let mut svg = String::new();
        for figure in figures {
            let height = if figure == Figure::PerClass {
                plot::per_class_height(classes).map_or(600, |h| h as u32)
            } else {
                600
            };
            page::figure::render_on(
                figure,
                &sources,
                SVGBackend::with_string(&mut svg, (800, height)),
                &style,
            )?;
        }
        println!(
            "{lab}: computed {computed:.0} ms, drawn {:.0} ms",
            ms(started) - computed
        );
        if let Some(request) = frame.readouts.rivals_request {
            let mut halves = loaded.worker_halves()?;
            let started = Instant::now();
            let rivals = halves.rivals(&request)?;
            println!("rivals (the worker's): {:.0} ms", ms(started));
            loaded.add_rivals(request, rivals);
            let frame = page::render(LabData::Own(&mut loaded), &state, &visible)?;
            let sources = Sources {
                frame: &frame,
                experiment: None,
            };
            page::figure::render_on(
                Figure::RivalsReliability,
                &sources,
                SVGBackend::with_string(&mut String::new(), (800, 600)),
                &style,
            )?;
        }
        let started = Instant::now();
        page::render(LabData::Own(&mut loaded), &state, &visible)?;
        println!("{lab}: next frame {:.0} ms", ms(started));
    }
    Ok(())
}
