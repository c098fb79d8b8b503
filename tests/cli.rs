//! Integration tests of `calibra report` and `calibra ood`: the real binary on files written to
//! a temporary directory. Bad input must exit with status 2 and one line
//! `calibra: <file or option>: <problem>`; good input must give the documented JSON, the values
//! the library (or scikit-learn, for `ood`) computes on the same rows, and the known answers of
//! synthetic data.

#![cfg(not(target_arch = "wasm32"))]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use calibra::bootstrap;
use calibra::calibration::{self, Binning, Logits};
use calibra::conformal::{self, Score};
use calibra::data::seeded_split;
use calibra::input::LogitsTable;
use calibra::lab::BOOTSTRAP;
use calibra::recalibration;
use calibra::smooth_calibration;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// Rows of the synthetic data sets with known answers.
const LARGE_N: usize = 20_000;
/// Classes of the synthetic data sets.
const LARGE_K: usize = 10;
/// The synthetic logits are this multiple of calibrated logits: the fitted temperature.
const TRUE_TEMPERATURE: f64 = 2.5;
/// Relative tolerance of the fitted temperature (fitted on 10,000 calibration rows).
const TEMPERATURE_RELATIVE_TOLERANCE: f64 = 0.03;
/// Miscoverage of the coverage checks, and the range the empirical coverage must fall in.
const COVERAGE_ALPHA: f64 = 0.1;
const COVERAGE_RANGE: (f64, f64) = (0.88, 0.92);
/// CLI and library run the same code on the same rows: they must agree to rounding.
const LIBRARY_TOLERANCE: f64 = 1e-12;
/// α of the small fixtures: a finite threshold needs only 3 calibration rows.
const SMALL_ALPHA: &str = "0.25";
/// OOD metrics worked out by hand are exact fractions: they must agree to rounding.
const HAND_TOLERANCE: f64 = 1e-12;
/// scikit-learn's OOD metrics (`scripts/ood-reference.py`) and calibra's differ only by the
/// order of floating-point sums.
const SCIKIT_LEARN_TOLERANCE: f64 = 1e-9;
/// The estimators against MAPIE 1.6 and uncertainty-calibration
/// (`scripts/estimators-reference.py`): the same sums in another order.
const ESTIMATORS_TOLERANCE: f64 = 1e-9;
/// smECE against relplot 1.0.3 (`scripts/smece-reference.py`), relative, where relplot's kernel
/// keeps its mass; bandwidths within one step of the bisection both use.
const RELPLOT_RELATIVE_TOLERANCE: f64 = 0.02;
const BANDWIDTH_TOLERANCE: f64 = 1.0 / 1024.0;
/// smECE against the definition summed directly by the same script, relative.
const DEFINITION_RELATIVE_TOLERANCE: f64 = 0.002;

// ---------------------------------------------------------------------------------------------
// Temporary files

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "calibra-cli-{}-{unique}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the temporary directory");
        Self(path)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// Writes `contents` to `file` in this directory and returns its path.
    fn write(&self, file: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(file);
        std::fs::write(&path, contents).expect("write a fixture");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// .npy files, written by hand (format version 1.0)

/// A NumPy element type: its `descr` and its little-endian bytes.
trait NpyElement: Copy {
    const DESCR: &'static str;
    fn extend_bytes(self, out: &mut Vec<u8>);
}

macro_rules! npy_element {
    ($($t:ty => $descr:literal),* $(,)?) => {$(
        impl NpyElement for $t {
            const DESCR: &'static str = $descr;
            fn extend_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

npy_element!(
    f32 => "<f4", f64 => "<f8",
    i8 => "|i1", i16 => "<i2", i32 => "<i4", i64 => "<i8",
    u8 => "|u1", u16 => "<u2", u32 => "<u4", u64 => "<u8",
);

/// The bytes of a version 1.0 `.npy` file whose header is the dictionary `dict`, followed by
/// `data`: magic `\x93NUMPY`, version 1.0, the header's length (2 bytes, little-endian), the
/// header padded with spaces and ended by '\n' so that the data start at a multiple of 64.
fn npy_file(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.to_string();
    // Magic (6), version (2), header length (2), header and '\n': a multiple of 64 bytes.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// `values` as the data of a `.npy` file.
fn little_endian_bytes<T: NpyElement>(values: &[T]) -> Vec<u8> {
    let mut data = Vec::new();
    for &value in values {
        value.extend_bytes(&mut data);
    }
    data
}

/// NumPy's header dictionary for this dtype, order and shape, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), }`.
fn npy_dict(descr: &str, fortran_order: bool, shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let shape_text = match dims.as_slice() {
        [single] => format!("({single},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran_order { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape_text}, }}")
}

/// The bytes of a `.npy` file holding `values` (in file order) with this shape.
fn npy_bytes<T: NpyElement>(shape: &[usize], fortran_order: bool, values: &[T]) -> Vec<u8> {
    let shape: Vec<u64> = shape.iter().map(|&dimension| dimension as u64).collect();
    npy_file(
        &npy_dict(T::DESCR, fortran_order, &shape),
        &little_endian_bytes(values),
    )
}

/// Row-major `[n, k]` logits as a C-ordered `.npy`.
fn npy_logits<T: NpyElement>(values: &[T], k: usize) -> Vec<u8> {
    npy_bytes(&[values.len() / k, k], false, values)
}

/// Labels as a `[n]` `.npy`.
fn npy_labels<T: NpyElement>(labels: &[T]) -> Vec<u8> {
    npy_bytes(&[labels.len()], false, labels)
}

/// Labels as a `[n]` `.npy` of another integer dtype.
fn npy_labels_as<T: NpyElement + TryFrom<u32>>(labels: &[u32]) -> Vec<u8> {
    let converted: Vec<T> = labels
        .iter()
        .map(|&label| T::try_from(label).unwrap_or_else(|_| panic!("label {label} does not fit")))
        .collect();
    npy_labels(&converted)
}

// ---------------------------------------------------------------------------------------------
// Text files

/// One line per row, values joined by `separator`, each written as Rust's shortest
/// round-tripping decimal.
fn text_rows(values: &[f32], k: usize, separator: &str) -> String {
    values
        .chunks(k)
        .map(|row| {
            let fields: Vec<String> = row.iter().map(ToString::to_string).collect();
            fields.join(separator) + "\n"
        })
        .collect()
}

fn text_labels(labels: &[u32]) -> String {
    labels.iter().map(|label| format!("{label}\n")).collect()
}

// ---------------------------------------------------------------------------------------------
// Data sets

/// Row-major logits and their labels.
struct Data {
    logits: Vec<f32>,
    labels: Vec<u32>,
    k: usize,
}

impl Data {
    fn len(&self) -> usize {
        self.labels.len()
    }

    /// The logits and labels of `rows`, in that order.
    fn rows(&self, rows: &[usize]) -> (Vec<f32>, Vec<u32>) {
        let logits = rows
            .iter()
            .flat_map(|&i| self.logits[i * self.k..(i + 1) * self.k].iter().copied())
            .collect();
        let labels = rows.iter().map(|&i| self.labels[i]).collect();
        (logits, labels)
    }

    /// The calibration and the test part of `calibra report`'s default split (half each, seed 0).
    fn halves(&self) -> [Data; 2] {
        let (calibration_rows, test_rows) = seeded_split(self.len(), 0.5, 0);
        [calibration_rows, test_rows].map(|rows| {
            let (logits, labels) = self.rows(&rows);
            Data {
                logits,
                labels,
                k: self.k,
            }
        })
    }

    /// The rows as the library's checked logits and labels.
    fn labelled(&self) -> recalibration::Labelled<'_> {
        recalibration::Labelled::new(Logits::new(&self.logits, self.k).unwrap(), &self.labels)
            .unwrap()
    }

    /// Writes `<stem>-logits.<ext>` and `<stem>-labels.<ext>` (ext `csv` or `npy`).
    fn write(&self, dir: &TempDir, stem: &str, ext: &str) -> (PathBuf, PathBuf) {
        let (logits, labels) = match ext {
            "npy" => (npy_logits(&self.logits, self.k), npy_labels(&self.labels)),
            "csv" => (
                text_rows(&self.logits, self.k, ",").into_bytes(),
                text_labels(&self.labels).into_bytes(),
            ),
            _ => panic!("unknown fixture type {ext}"),
        };
        (
            dir.write(&format!("{stem}-logits.{ext}"), logits),
            dir.write(&format!("{stem}-labels.{ext}"), labels),
        )
    }
}

/// A small data set with `n` rows of 3 classes: logits are multiples of 1/4 (exact in every
/// format), some negative (so not probabilities), labels mostly the top class.
fn small_data(n: usize) -> Data {
    let k = 3;
    let logits = (0..n * k)
        .map(|index| ((index * 7 + index / k * 5) % 17) as f32 / 4.0 - 2.0)
        .collect::<Vec<_>>();
    let labels = logits
        .chunks(k)
        .enumerate()
        .map(|(row, z)| {
            let top = (0..k).fold(0, |best, c| if z[c] > z[best] { c } else { best });
            if row % 4 == 3 {
                ((top + 1) % k) as u32
            } else {
                top as u32
            }
        })
        .collect();
    Data { logits, labels, k }
}

/// A standard normal draw (Box–Muller).
fn gaussian(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `n` rows of `k` classes: calibrated logits `z ~ 2·N(0, I)`, labels drawn from `softmax(z)`,
/// and the stored logits `temperature · z`, so the best temperature is `temperature`.
fn synthetic_data(n: usize, k: usize, temperature: f64, seed: u64) -> Data {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits = Vec::with_capacity(n * k);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let z: Vec<f64> = (0..k).map(|_| 2.0 * gaussian(&mut rng)).collect();
        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = z.iter().map(|&v| (v - max).exp()).collect();
        let mut draw = rng.random::<f64>() * weights.iter().sum::<f64>();
        let mut label = k - 1;
        for (class, &weight) in weights.iter().enumerate() {
            if draw < weight {
                label = class;
                break;
            }
            draw -= weight;
        }
        labels.push(label as u32);
        logits.extend(z.iter().map(|&v| (temperature * v) as f32));
    }
    Data { logits, labels, k }
}

// ---------------------------------------------------------------------------------------------
// Running the binary

/// `calibra <args...>`, with backtraces on so that a panic could not hide.
fn calibra<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run the calibra binary")
}

/// `calibra report --logits <logits> --labels <labels> <extra...>`.
fn report<S: AsRef<OsStr>>(logits: &Path, labels: &Path, extra: &[S]) -> Output {
    let mut args = vec![
        OsStr::new("report"),
        OsStr::new("--logits"),
        logits.as_os_str(),
        OsStr::new("--labels"),
        labels.as_os_str(),
    ];
    args.extend(extra.iter().map(AsRef::as_ref));
    calibra(&args)
}

/// `report` with `--json`, which must succeed; the parsed object.
fn report_json<S: AsRef<OsStr>>(logits: &Path, labels: &Path, extra: &[S]) -> Value {
    let mut args: Vec<&OsStr> = extra.iter().map(AsRef::as_ref).collect();
    args.push(OsStr::new("--json"));
    let output = report(logits, labels, &args);
    assert_success(&output);
    serde_json::from_slice(&output.stdout).expect("--json prints one JSON object")
}

fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "calibra failed with {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Exit status 2, nothing on stdout, and one line on stderr, `calibra: ...`, that contains
/// every one of `expected` and no sign of a panic.
fn assert_refused(output: &Output, expected: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "exit status; stderr: {stderr}"
    );
    assert!(output.stdout.is_empty(), "stdout of a refused run: {:?}", {
        String::from_utf8_lossy(&output.stdout)
    });
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr:?}");
    assert!(
        stderr.starts_with("calibra: "),
        "message prefix: {stderr:?}"
    );
    let lower = stderr.to_lowercase();
    assert!(
        !lower.contains("panicked") && !lower.contains("backtrace"),
        "a panic: {stderr:?}"
    );
    for needle in expected {
        assert!(
            stderr.contains(needle),
            "{needle:?} missing from {stderr:?}"
        );
    }
}

/// A path as the messages print it.
fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// The number at a JSON pointer such as `/conformal/coverage`.
fn number(json: &Value, pointer: &str) -> f64 {
    json.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer} in {json}"))
}

/// Asserts that two JSON values have the same shape and numbers within `tolerance`.
fn assert_json_close(actual: &Value, expected: &Value, tolerance: f64, at: &str) {
    match (actual, expected) {
        (Value::Number(a), Value::Number(e)) => {
            let (a, e) = (a.as_f64().unwrap(), e.as_f64().unwrap());
            assert!((a - e).abs() <= tolerance, "{at}: {a} vs {e}");
        }
        (Value::Array(a), Value::Array(e)) => {
            assert_eq!(a.len(), e.len(), "{at}: lengths");
            for (i, (a, e)) in a.iter().zip(e).enumerate() {
                assert_json_close(a, e, tolerance, &format!("{at}/{i}"));
            }
        }
        (Value::Object(a), Value::Object(e)) => {
            for (key, e) in e {
                let a = a.get(key).unwrap_or_else(|| panic!("{at}/{key} missing"));
                assert_json_close(a, e, tolerance, &format!("{at}/{key}"));
            }
        }
        _ => assert_eq!(actual, expected, "{at}"),
    }
}

const NO_ARGS: &[&str] = &[];
/// Numbers printed and parsed back by serde_json, which parses to within an ulp or so.
const PARSED_FLOAT_TOLERANCE: f64 = 1e-14;

// ---------------------------------------------------------------------------------------------
// Bad input: status 2, one line naming the file (or option) and the problem

#[test]
fn missing_files_are_refused_with_their_path() {
    let dir = TempDir::new("missing");
    for ext in ["csv", "npy"] {
        let (logits, labels) = small_data(24).write(&dir, ext, ext);
        let absent = dir.path(&format!("absent.{ext}"));
        assert_refused(&report(&absent, &labels, NO_ARGS), &[&shown(&absent)]);
        assert_refused(&report(&logits, &absent, NO_ARGS), &[&shown(&absent)]);
    }
}

#[test]
fn non_numeric_value_names_its_line() {
    let dir = TempDir::new("malformed");
    let (_, labels) = small_data(3).write(&dir, "ok", "csv");
    let logits = dir.write("logits.csv", "1,2,3\n2,1,0\n0,abc,1\n");
    assert_refused(
        &report(&logits, &labels, NO_ARGS),
        &[&shown(&logits), "line 3", "'abc' is not a number"],
    );
}

#[test]
fn ragged_row_names_its_line() {
    let dir = TempDir::new("ragged");
    let (_, labels) = small_data(4).write(&dir, "ok", "csv");
    let csv = dir.write("logits.csv", "a,b,c\n1,2,3\n\n2,1\n0,5,1\n");
    assert_refused(
        &report(&csv, &labels, NO_ARGS),
        &[&shown(&csv), "line 4", "2 values, expected 3"],
    );
    let txt = dir.write("logits.txt", "1 2 3\n2 1 0\n0 5 1 4\n");
    assert_refused(
        &report(&txt, &labels, NO_ARGS),
        &[&shown(&txt), "line 3", "4 values, expected 3"],
    );
}

#[test]
fn non_finite_text_logits_are_refused() {
    let dir = TempDir::new("nonfinite-text");
    let (_, labels) = small_data(3).write(&dir, "ok", "csv");
    for (name, value) in [
        ("nan", "NaN"),
        ("inf", "inf"),
        ("neginf", "-inf"),
        ("big", "1e300"),
    ] {
        let logits = dir.write(
            &format!("{name}.csv"),
            format!("1,2,3\n2,{value},0\n0,5,1\n"),
        );
        assert_refused(
            &report(&logits, &labels, NO_ARGS),
            &[&shown(&logits), "line 2, column 1", "not finite"],
        );
    }
}

#[test]
fn non_finite_npy_logits_are_refused() {
    let dir = TempDir::new("nonfinite-npy");
    let (_, labels) = small_data(3).write(&dir, "ok", "npy");
    let mut values = vec![1.0_f32, 2.0, 3.0, 2.0, 1.0, 0.0, 0.0, 5.0, 1.0];
    values[7] = f32::NAN;
    let nan = dir.write("nan.npy", npy_logits(&values, 3));
    assert_refused(
        &report(&nan, &labels, NO_ARGS),
        &[&shown(&nan), "row 2, column 1", "not finite"],
    );
    let mut values = vec![1.0_f64, 2.0, 3.0, 2.0, 1.0, 0.0, 0.0, 5.0, 1.0];
    values[3] = f64::INFINITY;
    let inf = dir.write("inf.npy", npy_logits(&values, 3));
    assert_refused(
        &report(&inf, &labels, NO_ARGS),
        &[&shown(&inf), "row 1, column 0", "not finite"],
    );
}

#[test]
fn label_outside_the_classes_is_refused() {
    let dir = TempDir::new("label-range");
    let data = small_data(24);
    let (csv_logits, _) = data.write(&dir, "ok", "csv");
    let (npy_logits_path, _) = data.write(&dir, "ok", "npy");
    let mut labels = data.labels.clone();
    labels[5] = 3;
    let csv = dir.write("labels.csv", text_labels(&labels));
    assert_refused(
        &report(&csv_logits, &csv, NO_ARGS),
        &[&shown(&csv), "label 3", "outside [0, 3)"],
    );
    let npy = dir.write("labels.npy", npy_labels(&labels));
    assert_refused(
        &report(&npy_logits_path, &npy, NO_ARGS),
        &[&shown(&npy), "label 3", "outside [0, 3)"],
    );
}

#[test]
fn negative_or_non_integer_label_is_refused() {
    let dir = TempDir::new("label-negative");
    let data = small_data(4);
    let (csv_logits, _) = data.write(&dir, "ok", "csv");
    let (npy_logits_path, _) = data.write(&dir, "ok", "npy");
    let csv = dir.write("labels.csv", "0\n1\n-1\n2\n");
    assert_refused(
        &report(&csv_logits, &csv, NO_ARGS),
        &[&shown(&csv), "line 3", "'-1' is not a label"],
    );
    let fractional = dir.write("fractional.csv", "0\n1.5\n1\n2\n");
    assert_refused(
        &report(&csv_logits, &fractional, NO_ARGS),
        &[&shown(&fractional), "line 2", "not a label"],
    );
    let npy = dir.write("labels.npy", npy_labels(&[0_i64, 1, -1, 2]));
    assert_refused(
        &report(&npy_logits_path, &npy, NO_ARGS),
        &[&shown(&npy), "label -1 at index 2", "negative"],
    );
}

#[test]
fn mismatched_lengths_are_refused() {
    let dir = TempDir::new("lengths");
    let data = small_data(24);
    for ext in ["csv", "npy"] {
        let (logits, _) = data.write(&dir, ext, ext);
        let labels = match ext {
            "csv" => dir.write("short.csv", text_labels(&data.labels[..23])),
            _ => dir.write("short.npy", npy_labels(&data.labels[..23])),
        };
        assert_refused(
            &report(&logits, &labels, NO_ARGS),
            &[&shown(&labels), &shown(&logits), "23 labels", "24 rows"],
        );
    }
}

#[test]
fn a_single_class_is_refused() {
    let dir = TempDir::new("one-class");
    let (_, labels) = small_data(3).write(&dir, "ok", "csv");
    let csv = dir.write("logits.csv", "1\n2\n3\n");
    assert_refused(
        &report(&csv, &labels, NO_ARGS),
        &[&shown(&csv), "1 column(s)", "at least 2 classes"],
    );
    let npy = dir.write("logits.npy", npy_logits(&[1.0_f32, 2.0, 3.0], 1));
    assert_refused(
        &report(&npy, &labels, NO_ARGS),
        &[&shown(&npy), "1 column(s)", "at least 2 classes"],
    );
}

#[test]
fn too_few_calibration_rows_are_refused() {
    let dir = TempDir::new("too-few");
    // 16 rows split in half: 8 calibration rows, one short of the 9 that α = 0.1 needs.
    for ext in ["csv", "npy"] {
        let (logits, labels) = small_data(16).write(&dir, ext, ext);
        assert_refused(
            &report(&logits, &labels, &["--alpha", "0.1"]),
            &[
                &shown(&logits),
                "8 calibration rows",
                "too few",
                "at least 9",
            ],
        );
        assert_success(&report(&logits, &labels, &["--alpha", "0.12"]));
    }
    // With test files, the whole of --logits is the calibration part.
    let (logits, labels) = small_data(8).write(&dir, "cal", "csv");
    let (test_logits, test_labels) = small_data(30).write(&dir, "test", "csv");
    let test_args = [
        OsStr::new("--test-logits"),
        test_logits.as_os_str(),
        OsStr::new("--test-labels"),
        test_labels.as_os_str(),
    ];
    assert_refused(
        &report(&logits, &labels, &test_args),
        &[&shown(&logits), "too few"],
    );
}

#[test]
fn unknown_option_values_are_refused() {
    let dir = TempDir::new("options");
    let (logits, labels) = small_data(24).write(&dir, "ok", "csv");
    for (args, expected) in [
        (["--score", "lacc"], ["--score", "invalid value"]),
        (["--binning", "quantile"], ["--binning", "invalid value"]),
        (["--randomized", "yes"], ["--randomized", "invalid value"]),
        (["--alpha", "abc"], ["--alpha", "invalid value"]),
        (["--bins", "-3"], ["--bins", "invalid value '-3'"]),
        (["--seed", "-1"], ["--seed", "invalid value '-1'"]),
        (
            ["--temperature", "-2"],
            ["--temperature", "not a positive number"],
        ),
        (
            ["--cal-fraction", "-0.5"],
            ["--cal-fraction", "between 0 and 1"],
        ),
        (["--alpha", "1.5"], ["--alpha", "(0, 1)"]),
        (["--alpha", "0"], ["--alpha", "(0, 1)"]),
        (
            ["--temperature", "0"],
            ["--temperature", "not a positive number"],
        ),
        (
            ["--temperature", "NaN"],
            ["--temperature", "not a positive number"],
        ),
        (["--bins", "0"], ["--bins", "between 1 and 1000"]),
        (["--bins", "1001"], ["--bins", "between 1 and 1000"]),
        (
            ["--cal-fraction", "1"],
            ["--cal-fraction", "between 0 and 1"],
        ),
        (["--lambda", "-1"], ["--lambda", "invalid lambda"]),
        (["--method", "platt"], ["--method", "invalid value 'platt'"]),
        (["--method", "uncalibrated"], ["--method", "invalid value"]),
    ] {
        let mut all = args.to_vec();
        if args[0] == "--lambda" {
            all.extend(["--score", "raps"]);
        }
        assert_refused(&report(&logits, &labels, &all), &expected);
    }
}

#[test]
fn a_given_temperature_is_refused_with_another_method() {
    let dir = TempDir::new("method-temperature");
    let (logits, labels) = small_data(24).write(&dir, "ok", "csv");
    for method in ["vector", "histogram", "isotonic"] {
        assert_refused(
            &report(
                &logits,
                &labels,
                &["--method", method, "--temperature", "2"],
            ),
            &["--temperature", &format!("not to --method {method}")],
        );
    }
}

#[test]
fn dirichlet_calibration_reports_its_fit_and_refuses_too_many_classes() {
    let dir = TempDir::new("dirichlet");
    let (logits, labels) = synthetic_data(400, 4, 2.0, 22).write(&dir, "four", "npy");
    let json = report_json(&logits, &labels, &["--method", "dirichlet"]);
    let fit = &json["dirichlet"];
    assert_eq!(fit["map"].as_array().map(Vec::len), Some(4 * 5), "{fit}");
    assert_eq!(fit["converged"], true, "{fit}");
    assert_eq!(fit["lambda"], 0.01);
    assert_eq!(fit["mu"], 0.01);
    assert!(report_json(&logits, &labels, NO_ARGS)
        .get("dirichlet")
        .is_none());
    let (logits, labels) = synthetic_data(400, 21, 2.0, 23).write(&dir, "many", "npy");
    assert_refused(
        &report(&logits, &labels, &["--method", "dirichlet"]),
        &["at most 20 classes, got 21"],
    );
}

#[test]
fn each_mistaken_fit_reports_what_the_library_computes() {
    use calibra::temperature_anatomy::{self, FitMistake, ANATOMY_POINTS};
    let dir = TempDir::new("mistakes");
    let data = synthetic_data(600, 4, 2.0, 24);
    let (logits, labels) = data.write(&dir, "data", "npy");
    let [calibration_part, test_part] = data.halves();
    let (calibration, test) = (calibration_part.labelled(), test_part.labelled());
    let grid = temperature_anatomy::temperature_grid(ANATOMY_POINTS).unwrap();
    for (name, mistake) in [
        ("evaluation-half", FitMistake::EvaluationHalf),
        ("probabilities", FitMistake::Probabilities),
        ("minimise-ece", FitMistake::MinimiseEce),
    ] {
        let json = report_json(&logits, &labels, &["--mistake", name, "--bins", "10"]);
        let fit = temperature_anatomy::mistaken_fit(
            mistake,
            &calibration,
            &test,
            &grid,
            10,
            Binning::Width,
        )
        .unwrap();
        let sentence = calibra::sentences::fit_mistake_sentence(
            &fit,
            json["temperature"].as_f64().unwrap(),
            &serde_json::from_value(json["after"].clone()).unwrap(),
            10,
        );
        let mut expected = serde_json::to_value(&fit).unwrap();
        expected["sentence"] = Value::from(sentence.clone());
        assert_json_close(&json["mistake"], &expected, PARSED_FLOAT_TOLERANCE, name);
        assert_eq!(json["mistake"]["mistake"], name);
        // Truth by construction: fitted on the test part itself, T minimises the test NLL, so
        // the mistaken NLL can only flatter the honest fit's.
        if mistake == FitMistake::EvaluationHalf {
            assert!(fit.evaluation.nll <= json["after"]["nll"].as_f64().unwrap() + 1e-12);
        }
        let text = report(&logits, &labels, &["--mistake", name, "--bins", "10"]);
        assert_success(&text);
        let stdout = String::from_utf8_lossy(&text.stdout);
        assert!(
            stdout.contains(&format!("mistaken fit: {name}\n")) && stdout.contains(&sentence),
            "{stdout}"
        );
    }
    assert_refused(
        &report(
            &logits,
            &labels,
            &["--mistake", "probabilities", "--temperature", "2"],
        ),
        &["--mistake probabilities", "leave out --temperature"],
    );
}

#[test]
fn each_method_reports_what_the_library_computes() {
    let dir = TempDir::new("methods");
    let data = synthetic_data(400, 4, 2.0, 21);
    let (logits, labels) = data.write(&dir, "data", "npy");
    let default = report_json(&logits, &labels, NO_ARGS);
    assert_eq!(
        default["recalibration"]["nll"], default["after"]["nll"],
        "temperature, the default, is the scaled column"
    );
    assert_eq!(
        default["recalibration"]["accuracy"],
        default["after"]["accuracy"]
    );
    let [calibration_part, test_part] = data.halves();
    let (calibration, test) = (calibration_part.labelled(), test_part.labelled());
    for (name, method) in [
        ("vector", recalibration::Method::Vector),
        ("histogram", recalibration::Method::Histogram),
        ("isotonic", recalibration::Method::Isotonic),
        ("venn-abers", recalibration::Method::VennAbers),
        ("dirichlet", recalibration::Method::Dirichlet),
    ] {
        let json = report_json(&logits, &labels, &["--method", name]);
        let expected = serde_json::to_value(
            recalibration::fit_and_report(method, &calibration, &test, 15, Binning::Width).unwrap(),
        )
        .unwrap();
        // serde_json parses floats to within an ulp, not exactly.
        assert_json_close(
            &json["recalibration"],
            &expected,
            PARSED_FLOAT_TOLERANCE,
            name,
        );
        assert_eq!(json["after"], default["after"], "--method leaves the rest");
        let text = report(&logits, &labels, &["--method", name]);
        assert_success(&text);
        let stdout = String::from_utf8_lossy(&text.stdout);
        assert!(
            stdout.contains(&format!(
                "{} (fitted on the calibration part)",
                method.title()
            )),
            "{stdout}"
        );
    }
    // At a given T, temperature scaling is not fitted, and its block says so.
    let given = report(&logits, &labels, &["--temperature", "2"]);
    assert_success(&given);
    let stdout = String::from_utf8_lossy(&given.stdout);
    assert!(stdout.contains("temperature scaling (T given)"), "{stdout}");
    assert!(
        !stdout.contains("(fitted on the calibration part)"),
        "{stdout}"
    );
    // With `--bootstrap`, the recalibration's ECE and NLL get the library's intervals (the
    // LogitNorm lab's table); for one temperature, those of `after`, from the same resamples.
    assert!(default.get("recalibration_intervals").is_none());
    let json = report_json(
        &logits,
        &labels,
        &["--method", "normalized", "--bootstrap", "10"],
    );
    let settings = bootstrap::BootstrapSettings {
        resamples: 10,
        ..BOOTSTRAP
    };
    let fitted = recalibration::fit(recalibration::Method::Normalized, &calibration).unwrap();
    let expected =
        recalibration::bootstrap_ece_nll(&fitted, &test, 15, Binning::Width, &settings).unwrap();
    assert_json_close(
        &json["recalibration_intervals"],
        &serde_json::to_value(expected).unwrap(),
        PARSED_FLOAT_TOLERANCE,
        "normalised temperature scaling",
    );
    let temperature = report_json(&logits, &labels, &["--bootstrap", "10"]);
    for metric in ["ece", "nll"] {
        assert_json_close(
            &temperature["recalibration_intervals"][metric],
            &temperature["after"]["intervals"][metric],
            PARSED_FLOAT_TOLERANCE,
            metric,
        );
    }
    let text = report(
        &logits,
        &labels,
        &["--method", "normalized", "--bootstrap", "10"],
    );
    assert_success(&text);
    assert!(String::from_utf8_lossy(&text.stdout).contains("nll 95% interval"));
}

#[test]
fn bootstrap_adds_the_libraries_intervals_and_only_when_asked() {
    // 10 resamples: the library's intervals at the same settings, at a tenth of the page's
    // cost (a test binary is unoptimised).
    let dir = TempDir::new("bootstrap");
    let data = synthetic_data(400, 4, 2.0, 5);
    let (logits, labels) = data.write(&dir, "data", "npy");
    let plain = report_json(&logits, &labels, NO_ARGS);
    assert!(plain.get("bootstrap_resamples").is_none());
    assert!(plain["before"].get("intervals").is_none());
    assert!(plain["conformal"].get("coverage_interval").is_none());
    let json = report_json(&logits, &labels, &["--bootstrap", "10"]);
    assert_eq!(json["bootstrap_resamples"], 10);
    let (_, test_rows) = seeded_split(data.len(), 0.5, 0);
    let (test_logits, test_labels) = data.rows(&test_rows);
    let test = Logits::new(&test_logits, 4).unwrap();
    let settings = bootstrap::BootstrapSettings {
        resamples: 10,
        ..BOOTSTRAP
    };
    for (column, temperature) in [("before", 1.0), ("after", number(&json, "/temperature"))] {
        let expected = bootstrap::bootstrap_intervals(
            &test,
            &test_labels,
            temperature,
            15,
            Binning::Width,
            &settings,
        )
        .unwrap();
        assert_json_close(
            &json[column]["intervals"],
            &serde_json::to_value(expected).unwrap(),
            PARSED_FLOAT_TOLERANCE,
            column,
        );
        assert_eq!(
            json[column]["ece"],
            json[column]["intervals"]["ece"]["estimate"]
        );
    }
    let covered = (number(&json, "/conformal/coverage") * 200.0).round() as usize;
    let expected = bootstrap::proportion_interval(covered, 200, BOOTSTRAP.level).unwrap();
    assert_json_close(
        &json["conformal"]["coverage_interval"],
        &serde_json::to_value(expected).unwrap(),
        PARSED_FLOAT_TOLERANCE,
        "coverage",
    );
    let text = report(
        &logits,
        &labels,
        &["--bootstrap", "10", "--temperature", "1"],
    );
    assert_success(&text);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("95% bootstrap intervals (10 resamples of the test part)"));
    assert!(stdout.contains("coverage, 95%"), "{stdout}");
    assert_refused(
        &report(&logits, &labels, &["--bootstrap", "1"]),
        &["--bootstrap", "between 2 and 10000"],
    );
}

#[test]
fn test_files_with_other_class_count_are_refused() {
    let dir = TempDir::new("test-classes");
    let (logits, labels) = small_data(24).write(&dir, "cal", "csv");
    let test_logits = dir.write("test-logits.csv", "1,2\n2,1\n");
    let test_labels = dir.write("test-labels.csv", "0\n1\n");
    let output = report(
        &logits,
        &labels,
        &[
            OsStr::new("--test-logits"),
            test_logits.as_os_str(),
            OsStr::new("--test-labels"),
            test_labels.as_os_str(),
        ],
    );
    assert_refused(&output, &[&shown(&test_logits), "2 classes", "has 3"]);
}

#[test]
fn test_logits_without_test_labels_are_refused() {
    let dir = TempDir::new("test-alone");
    let (logits, labels) = small_data(24).write(&dir, "ok", "csv");
    let output = report(
        &logits,
        &labels,
        &[OsStr::new("--test-logits"), logits.as_os_str()],
    );
    assert_refused(&output, &["--test-labels"]);
}

#[test]
fn empty_files_are_refused() {
    let dir = TempDir::new("empty");
    let (logits, labels) = small_data(24).write(&dir, "ok", "csv");
    let empty_logits = dir.write("empty-logits.csv", "\n\n");
    assert_refused(
        &report(&empty_logits, &labels, NO_ARGS),
        &[&shown(&empty_logits), "no rows"],
    );
    let header_only = dir.write("header.csv", "a,b,c\n");
    assert_refused(
        &report(&header_only, &labels, NO_ARGS),
        &[&shown(&header_only), "no rows"],
    );
    let empty_labels = dir.write("empty-labels.csv", "");
    assert_refused(
        &report(&logits, &empty_labels, NO_ARGS),
        &[&shown(&empty_labels), "no rows"],
    );
}

#[test]
fn unknown_file_type_is_refused() {
    let dir = TempDir::new("extension");
    let (_, labels) = small_data(24).write(&dir, "ok", "csv");
    let logits = dir.write("logits.json", "[[1, 2, 3]]");
    assert_refused(
        &report(&logits, &labels, NO_ARGS),
        &[&shown(&logits), "unknown file type"],
    );
}

#[test]
fn malformed_npy_files_are_refused() {
    let dir = TempDir::new("npy-malformed");
    let data = small_data(24);
    let (logits, labels) = data.write(&dir, "ok", "npy");

    let garbage = dir.write("garbage.npy", "1,2,3\n");
    assert_refused(
        &report(&garbage, &labels, NO_ARGS),
        &[&shown(&garbage), "not a .npy file"],
    );
    let mut bytes = npy_logits(&data.logits, 3);
    bytes.truncate(bytes.len() - 10);
    let truncated = dir.write("truncated.npy", bytes);
    assert_refused(
        &report(&truncated, &labels, NO_ARGS),
        &[
            &shown(&truncated),
            "shape [24, 3] of 4-byte values needs 288 bytes of data, but the file has 278",
        ],
    );
    let integer_logits = dir.write("int-logits.npy", npy_logits(&[1_i32, 2, 3, 4], 2));
    assert_refused(
        &report(&integer_logits, &labels, NO_ARGS),
        &[
            &shown(&integer_logits),
            "float16, float32 or float64, found dtype '<i4'",
        ],
    );
    let flat_logits = dir.write("flat-logits.npy", npy_labels(&data.logits));
    assert_refused(
        &report(&flat_logits, &labels, NO_ARGS),
        &[&shown(&flat_logits), "shape [n, K]"],
    );
    let float_labels = dir.write("float-labels.npy", npy_labels(&[0.0_f32; 24]));
    assert_refused(
        &report(&logits, &float_labels, NO_ARGS),
        &[&shown(&float_labels), "labels must be integers"],
    );
    let column_labels = dir.write(
        "column-labels.npy",
        npy_bytes(&[24, 1], false, &data.labels),
    );
    assert_refused(
        &report(&logits, &column_labels, NO_ARGS),
        &[&shown(&column_labels), "shape [n]"],
    );
}

/// `2**40`: two such dimensions multiply to `2**80`, past `u64`.
const HUGE_DIMENSION: u64 = 1 << 40;

/// A header whose shape's element count (or byte size) overflows is refused before npyz
/// multiplies the dimensions, which panics in a debug build: for logits and labels, in `report`
/// and `ood`.
#[test]
fn npy_shape_that_overflows_is_refused() {
    let dir = TempDir::new("npy-overflow");
    let (logits, labels) = small_data(24).write(&dir, "ok", "npy");
    let huge = [HUGE_DIMENSION, HUGE_DIMENSION];
    let overflow = [
        "the header's shape [1099511627776, 1099511627776] overflows",
        "its dimensions multiply to more than",
    ];
    let huge_logits = dir.write(
        "huge-logits.npy",
        npy_file(&npy_dict("<f4", false, &huge), &[]),
    );
    let huge_labels = dir.write(
        "huge-labels.npy",
        npy_file(&npy_dict("<i8", false, &huge), &[]),
    );
    for (output, path) in [
        (report(&huge_logits, &labels, NO_ARGS), &huge_logits),
        (report(&logits, &huge_labels, NO_ARGS), &huge_labels),
        (ood(&huge_logits, &logits, NO_ARGS), &huge_logits),
        (ood(&logits, &huge_logits, NO_ARGS), &huge_logits),
    ] {
        assert_refused(&output, &[&shown(path), overflow[0], overflow[1]]);
    }
    // A zero dimension makes the count 0, but npyz still multiplies the others (its strides).
    let zero = dir.write(
        "zero.npy",
        npy_file(
            &npy_dict("<f4", false, &[0, HUGE_DIMENSION, HUGE_DIMENSION]),
            &[],
        ),
    );
    assert_refused(
        &report(&zero, &labels, NO_ARGS),
        &[
            &shown(&zero),
            "overflows",
            "its non-zero dimensions multiply",
        ],
    );
    // 2**62 elements fit in usize; 2**65 bytes do not.
    let bytes = dir.write(
        "bytes.npy",
        npy_file(&npy_dict("<f8", false, &[1 << 31, 1 << 31]), &[]),
    );
    assert_refused(
        &report(&bytes, &labels, NO_ARGS),
        &[
            &shown(&bytes),
            "of 8-byte values overflows",
            "size in bytes",
        ],
    );
    // A dimension of 2**70 is not even a u64.
    let beyond = dir.write(
        "beyond.npy",
        npy_file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1180591620717411303424, 3), }",
            &[],
        ),
    );
    assert_refused(
        &report(&beyond, &labels, NO_ARGS),
        &[
            &shown(&beyond),
            "dimension 1180591620717411303424 overflows",
        ],
    );
    // Python keeps the last of two equal keys: a small first shape must not hide a huge second.
    let twice = dir.write(
        "twice.npy",
        npy_file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (24, 3), \
             'shape': (1099511627776, 1099511627776), }",
            &little_endian_bytes(&small_data(24).logits),
        ),
    );
    assert_refused(
        &report(&twice, &labels, NO_ARGS),
        &[&shown(&twice), "key 'shape' appears twice"],
    );
}

/// The data after the header must be exactly the shape's elements of the dtype's size: fewer
/// or more bytes are refused, and a huge declared shape over a few bytes reads nothing.
#[test]
fn npy_data_length_must_match_the_header() {
    let dir = TempDir::new("npy-length");
    let data = small_data(24);
    let (logits, labels) = data.write(&dir, "ok", "npy");
    // 24 × 3 float32 logits: 288 bytes.
    let short = dir.write("short.npy", npy_bytes(&[24, 3], false, &data.logits[..71]));
    let mut one_more = data.logits.clone();
    one_more.push(0.5);
    let long = dir.write("long.npy", npy_bytes(&[24, 3], false, &one_more));
    let huge = dir.write(
        "huge.npy",
        npy_bytes(&[1 << 30, 10], false, &data.logits[..2]),
    );
    for (path, expected) in [
        (&short, "needs 288 bytes of data, but the file has 284"),
        (&long, "needs 288 bytes of data, but the file has 292"),
        (&huge, "needs 42949672960 bytes of data, but the file has 8"),
    ] {
        assert_refused(
            &report(path, &labels, NO_ARGS),
            &[&shown(path), "of 4-byte values", expected],
        );
    }
    // 24 uint32 labels: 96 bytes.
    let short_labels = dir.write(
        "short-labels.npy",
        npy_bytes(&[24], false, &data.labels[..23]),
    );
    assert_refused(
        &report(&logits, &short_labels, NO_ARGS),
        &[
            &shown(&short_labels),
            "shape [24] of 4-byte values needs 96 bytes of data, but the file has 92",
        ],
    );
}

/// A header that is not NumPy's dictionary, or a preamble of another format version or whose
/// header length runs past the end, is refused with what is wrong.
#[test]
fn npy_header_outside_numpys_format_is_refused() {
    let dir = TempDir::new("npy-header");
    let data = small_data(24);
    let (_, labels) = data.write(&dir, "ok", "npy");
    let good = npy_logits(&data.logits, 3);
    let mut version = good.clone();
    version[6] = 9;
    let mut length = good.clone();
    length[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    let mut cases = vec![
        (
            dir.write("version.npy", version),
            "format version 9.0".to_string(),
        ),
        (
            dir.write("length.npy", length),
            "header length 65535 runs past the end".to_string(),
        ),
    ];
    let values = little_endian_bytes(&data.logits);
    for (file, dict, expected) in [
        (
            "no-shape.npy",
            "{'descr': '<f4', 'fortran_order': False, }",
            "no 'shape' key",
        ),
        (
            "structured.npy",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (24, 3), }",
            "structured arrays are not read",
        ),
        (
            "escaped.npy",
            "{'descr': '\\x3cf4', 'fortran_order': False, 'shape': (24, 3), }",
            "escaped string",
        ),
        (
            "float-shape.npy",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (24.0, 3), }",
            "expected ')'",
        ),
    ] {
        cases.push((
            dir.write(file, npy_file(dict, &values)),
            expected.to_string(),
        ));
    }
    for (path, expected) in &cases {
        assert_refused(&report(path, &labels, NO_ARGS), &[&shown(path), expected]);
    }
}

#[test]
fn probabilities_need_from_probabilities() {
    let dir = TempDir::new("probabilities");
    let data = synthetic_data(200, 4, 1.0, 11);
    let view = Logits::new(&data.logits, data.k).unwrap();
    // Stored as f32, as a file of a network's probabilities would be.
    let probabilities = Data {
        logits: calibration::softmax(&view, 1.0)
            .unwrap()
            .iter()
            .map(|&p| p as f32)
            .collect(),
        labels: data.labels.clone(),
        k: data.k,
    };
    for ext in ["csv", "npy"] {
        let (logits, labels) = probabilities.write(&dir, ext, ext);
        assert_refused(
            &report(&logits, &labels, NO_ARGS),
            &[&shown(&logits), "probabilities", "--from-probabilities"],
        );
        let json = report_json(&logits, &labels, &["--from-probabilities"]);
        assert_eq!(
            number(&json, "/n_calibration") + number(&json, "/n_test"),
            200.0
        );
        // log p is softmax(z) shifted per row: the same predictions as z.
        let direct = report_json(
            &dir.write("z.npy", npy_logits(&data.logits, data.k)),
            &labels,
            NO_ARGS,
        );
        assert_eq!(
            number(&json, "/before/accuracy"),
            number(&direct, "/before/accuracy")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// JSON output

#[test]
fn json_has_every_documented_key() {
    let dir = TempDir::new("json-keys");
    let (logits, labels) = small_data(40).write(&dir, "ok", "csv");
    let json = report_json(&logits, &labels, NO_ARGS);
    for key in [
        "n_calibration",
        "n_test",
        "num_classes",
        "temperature",
        "temperature_fitted",
        "before",
        "after",
        "recalibration",
        "conformal",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    assert_eq!(json["recalibration"]["method"], "temperature");
    for key in [
        "accuracy",
        "ece",
        "smece",
        "smece_bandwidth",
        "nll",
        "brier",
        "distinct_confidences",
        "changed_predictions",
        "calibration_ece",
    ] {
        number(&json, &format!("/recalibration/{key}"));
    }
    for part in ["before", "after"] {
        for key in [
            "accuracy",
            "nll",
            "brier",
            "ece",
            "rmsce",
            "mce",
            "classwise_ece",
            "smece",
            "smece_bandwidth",
        ] {
            number(&json, &format!("/{part}/{key}"));
        }
        let bins = json[part]["bins"].as_array().expect("bins is a list");
        for bin in bins {
            for key in ["lower", "upper", "count", "confidence", "accuracy"] {
                assert!(bin[key].is_number(), "{part} bin {key} in {bin}");
            }
        }
    }
    let conformal = &json["conformal"];
    assert_eq!(conformal["score"], "aps");
    assert_eq!(conformal["randomized"], true);
    for key in [
        "alpha",
        "qhat",
        "coverage",
        "average_set_size",
        "singleton_rate",
        "singleton_hit_rate",
        "empty_rate",
    ] {
        assert!(conformal[key].is_number(), "conformal {key} in {conformal}");
    }
    let per_class = conformal["per_class_coverage"].as_array();
    assert_eq!(per_class.map(Vec::len), Some(3), "{conformal}");
    assert!(conformal.get("qhat_per_class").is_none(), "{conformal}");
    assert_eq!(number(&json, "/num_classes"), 3.0);
    assert_eq!(number(&json, "/conformal/alpha"), 0.1);
}

/// `report` on `data` as both its calibration and its test part, with `extra` options: the
/// `--json` object and the text table.
fn report_on_own_rows(data: &Data, name: &str, ext: &str, extra: &[&str]) -> (Value, String) {
    let dir = TempDir::new(name);
    let (logits, labels) = data.write(&dir, name, ext);
    let mut args = vec![
        OsStr::new("--test-logits"),
        logits.as_os_str(),
        OsStr::new("--test-labels"),
        labels.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    let json = report_json(&logits, &labels, &args);
    let output = report(&logits, &labels, &args);
    assert_success(&output);
    (json, String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `report --json`'s estimators at T = 1 (`before`) and at `--temperature 1.7` (`after`) on
/// the rows of `scripts/estimators-reference.py`, against MAPIE's tests, KS error and
/// per-class ECEs (weighted by their rows, Gupta & Ramdas's top-label ECE) and
/// uncertainty-calibration's debiased L2 error on the same equal-width bins.
#[test]
fn report_estimators_match_the_libraries() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/estimators/expected.json")).unwrap();
    let numbers = |key: &str| -> Vec<f64> {
        fixture[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let data = Data {
        logits: numbers("logits").iter().map(|&v| v as f32).collect(),
        labels: numbers("labels").iter().map(|&v| v as u32).collect(),
        k: number(&fixture, "/num_classes") as usize,
    };
    let (json, _) = report_on_own_rows(&data, "estimators", "npy", &["--temperature", "1.7"]);
    let cases = fixture["temperatures"].as_array().unwrap();
    for (part, case) in ["before", "after"].iter().zip(cases) {
        let mapie = &case["mapie"];
        let top_label: f64 = mapie["top_label_per_class"]
            .as_array()
            .unwrap()
            .iter()
            .map(|class| number(class, "/count") * number(class, "/ece"))
            .sum::<f64>()
            / data.len() as f64;
        for (key, expected) in [
            (
                "ece_debiased",
                number(case, "/uncertainty_calibration/debiased_l2_equal_width"),
            ),
            ("top_label_ece", top_label),
            ("ks_error", number(mapie, "/ks_error")),
            ("spiegelhalter_z", number(mapie, "/spiegelhalter/statistic")),
            ("spiegelhalter_p", number(mapie, "/spiegelhalter/p_value")),
            ("kuiper", number(mapie, "/kuiper/statistic")),
            ("kuiper_p", number(mapie, "/kuiper/p_value")),
            (
                "ks_statistic",
                number(mapie, "/kolmogorov_smirnov/statistic"),
            ),
            ("ks_p", number(mapie, "/kolmogorov_smirnov/p_value")),
        ] {
            let actual = number(&json, &format!("/{part}/{key}"));
            assert!(
                (actual - expected).abs() <= ESTIMATORS_TOLERANCE,
                "{part} {key}: {actual}, libraries {expected}"
            );
        }
    }
}

/// Every test row certain and right: the cumulative differences and Z have no scale, so the
/// tests are `null` in the JSON and `-` in the table, and the errors are 0.
#[test]
fn report_writes_null_for_a_test_without_scale() {
    let data = Data {
        logits: [
            100.0, 0.0, 0.0, 0.0, 100.0, 0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0,
        ]
        .to_vec(),
        labels: vec![0, 1, 2, 0],
        k: 3,
    };
    let (json, text) = report_on_own_rows(
        &data,
        "estimators-null",
        "csv",
        &["--alpha", SMALL_ALPHA, "--temperature", "1"],
    );
    for key in [
        "spiegelhalter_z",
        "spiegelhalter_p",
        "kuiper",
        "kuiper_p",
        "ks_statistic",
        "ks_p",
    ] {
        assert!(json["before"][key].is_null(), "{key} in {}", json["before"]);
    }
    for key in ["ece_debiased", "top_label_ece", "ks_error"] {
        assert_eq!(number(&json, &format!("/before/{key}")), 0.0);
    }
    let kuiper_line = text
        .lines()
        .find(|line| line.starts_with("kuiper"))
        .unwrap();
    assert_eq!(
        kuiper_line.split_whitespace().skip(1).collect::<Vec<_>>(),
        ["-"; 4]
    );
}

/// The cases of `scripts/smece-reference.py`: inputs, relplot's values and the definition's.
fn smece_case(name: &str) -> Value {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/smece/expected.json")).unwrap();
    fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["name"] == name)
        .unwrap_or_else(|| panic!("no smECE case {name}"))
        .clone()
}

fn relative_difference(actual: f64, expected: f64) -> f64 {
    (actual - expected).abs() / expected.abs()
}

/// relplot's smECE of the "overconfident" case, through logits: 10 classes, the top class at
/// `log f`, the other nine at `log((1 − f)/9)`, so that the top-label confidence is `f`; the
/// label is the top class when the case says correct.
#[test]
fn smece_matches_relplot_on_logits_of_known_confidence() {
    let case = smece_case("overconfident");
    let k = 10;
    let mut logits = Vec::new();
    let mut labels = Vec::new();
    for (f, correct) in case["confidence"]
        .as_array()
        .unwrap()
        .iter()
        .zip(case["correct"].as_array().unwrap())
    {
        let f = f.as_f64().unwrap();
        logits.push(f.ln() as f32);
        logits.extend(std::iter::repeat_n(((1.0 - f) / 9.0).ln() as f32, k - 1));
        labels.push(if correct.as_bool().unwrap() { 0 } else { 1 });
    }
    let dir = TempDir::new("smece-relplot");
    let (logits, labels) = Data { logits, labels, k }.write(&dir, "case", "npy");
    let test = [
        OsStr::new("--test-logits"),
        logits.as_os_str(),
        OsStr::new("--test-labels"),
        labels.as_os_str(),
        OsStr::new("--alpha"),
        OsStr::new(SMALL_ALPHA),
    ];
    let json = report_json(&logits, &labels, &test);
    let smece = number(&json, "/before/smece");
    let expected = number(&case, "/smece");
    assert!(
        relative_difference(smece, expected) <= RELPLOT_RELATIVE_TOLERANCE,
        "smECE {smece}, relplot {expected}"
    );
    let bandwidth = number(&json, "/before/smece_bandwidth");
    assert!((bandwidth - number(&case, "/bandwidth")).abs() <= BANDWIDTH_TOLERANCE);
}

/// The bundled network's logits of the first 64 test images at T = 1 and T = 2: the CLI's
/// smECE is the definition's (summed directly by `scripts/smece-reference.py`). relplot's is
/// larger there: its kernel drops mass at confidence 1 (docs/definitions.md).
#[test]
fn smece_of_the_networks_logits_matches_the_definition() {
    let at_one = smece_case("fmnist-ce-first64-T1");
    let at_two = smece_case("fmnist-ce-first64-T2");
    let logits: Vec<f32> =
        serde_json::from_str(include_str!("fixtures/fmnist-ce-first64-logits.json")).unwrap();
    let labels: Vec<u32> = at_one["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|label| label.as_u64().unwrap() as u32)
        .collect();
    let dir = TempDir::new("smece-network");
    let (logits, labels) = Data {
        logits,
        labels,
        k: 10,
    }
    .write(&dir, "first64", "npy");
    let test = [
        OsStr::new("--test-logits"),
        logits.as_os_str(),
        OsStr::new("--test-labels"),
        labels.as_os_str(),
        OsStr::new("--temperature"),
        OsStr::new("2"),
        OsStr::new("--alpha"),
        OsStr::new(SMALL_ALPHA),
    ];
    let json = report_json(&logits, &labels, &test);
    for (part, case) in [("before", &at_one), ("after", &at_two)] {
        let smece = number(&json, &format!("/{part}/smece"));
        let expected = number(case, "/definition_smece");
        assert!(
            relative_difference(smece, expected) <= DEFINITION_RELATIVE_TOLERANCE,
            "{part}: smECE {smece}, definition {expected}"
        );
        assert_eq!(
            number(&json, &format!("/{part}/smece_bandwidth")),
            number(case, "/definition_bandwidth"),
            "{part}"
        );
        assert!(
            smece < number(case, "/smece"),
            "{part}: relplot's is larger"
        );
    }
}

#[test]
fn json_counts_and_accuracy_on_a_split() {
    let dir = TempDir::new("json-split");
    let (logits, labels) = small_data(41).write(&dir, "ok", "npy");
    for fraction in ["0.5", "0.3"] {
        let json = report_json(&logits, &labels, &["--cal-fraction", fraction]);
        let n_calibration = number(&json, "/n_calibration");
        let n_test = number(&json, "/n_test");
        assert_eq!(n_calibration + n_test, 41.0);
        let expected = (41.0 * fraction.parse::<f64>().unwrap()).round();
        assert_eq!(n_calibration, expected);
        assert_eq!(json["temperature_fitted"], true);
        // A positive temperature does not change the arg max.
        assert_eq!(
            number(&json, "/before/accuracy"),
            number(&json, "/after/accuracy")
        );
    }
}

#[test]
fn json_counts_with_test_files() {
    let dir = TempDir::new("json-test-files");
    let (logits, labels) = small_data(23).write(&dir, "cal", "csv");
    let (test_logits, test_labels) = small_data(37).write(&dir, "test", "npy");
    let json = report_json(
        &logits,
        &labels,
        &[
            OsStr::new("--test-logits"),
            test_logits.as_os_str(),
            OsStr::new("--test-labels"),
            test_labels.as_os_str(),
        ],
    );
    assert_eq!(number(&json, "/n_calibration"), 23.0);
    assert_eq!(number(&json, "/n_test"), 37.0);
    assert_eq!(
        number(&json, "/before/accuracy"),
        number(&json, "/after/accuracy")
    );
}

#[test]
fn json_echoes_a_given_temperature() {
    let dir = TempDir::new("json-temperature");
    let (logits, labels) = small_data(40).write(&dir, "ok", "csv");
    let json = report_json(&logits, &labels, &["--temperature", "2"]);
    assert_eq!(number(&json, "/temperature"), 2.0);
    assert_eq!(json["temperature_fitted"], false);
    assert_eq!(
        number(&json, "/before/accuracy"),
        number(&json, "/after/accuracy")
    );
    // Scaling by 2 flattens the probabilities: the NLL changes.
    assert_ne!(number(&json, "/before/nll"), number(&json, "/after/nll"));
}

#[test]
fn json_bins_follow_bins_and_count_the_test_rows() {
    let dir = TempDir::new("json-bins");
    let (logits, labels) = small_data(60).write(&dir, "ok", "npy");
    for binning in ["width", "mass"] {
        for bins in [1, 7, 15] {
            let json = report_json(
                &logits,
                &labels,
                &["--bins", &bins.to_string(), "--binning", binning],
            );
            let n_test = number(&json, "/n_test");
            for part in ["before", "after"] {
                let list = json[part]["bins"].as_array().unwrap();
                assert_eq!(list.len(), bins, "{binning} {part}");
                let total: f64 = list.iter().map(|bin| bin["count"].as_f64().unwrap()).sum();
                assert_eq!(total, n_test, "{binning} {part} with {bins} bins");
            }
        }
    }
}

/// The same logits as float64, in Fortran order, or as text give the same report.
#[test]
fn npy_float64_fortran_and_csv_logits_give_the_same_report() {
    let dir = TempDir::new("npy-dtypes");
    let data = small_data(30);
    let (logits, labels) = data.write(&dir, "f32", "npy");
    let expected = report_json(&logits, &labels, NO_ARGS);

    let f64_values: Vec<f64> = data.logits.iter().map(|&z| f64::from(z)).collect();
    let f64_logits = dir.write("f64.npy", npy_logits(&f64_values, 3));
    assert_eq!(
        report_json(&f64_logits, &labels, NO_ARGS),
        expected,
        "float64"
    );

    // NumPy writes a transposed [K, n] array as a Fortran-ordered [n, K] one: column by column.
    let column_major: Vec<f32> = (0..3)
        .flat_map(|c| data.logits.iter().skip(c).step_by(3).copied())
        .collect();
    let fortran = dir.write("fortran.npy", npy_bytes(&[30, 3], true, &column_major));
    assert_eq!(
        report_json(&fortran, &labels, NO_ARGS),
        expected,
        "fortran order"
    );

    let (csv_logits, csv_labels) = data.write(&dir, "text", "csv");
    assert_eq!(
        report_json(&csv_logits, &csv_labels, NO_ARGS),
        expected,
        "csv"
    );
}

/// Labels of every integer dtype give the same report.
#[test]
fn npy_labels_of_any_integer_dtype_are_read() {
    let dir = TempDir::new("npy-label-dtypes");
    let data = small_data(30);
    let (logits, labels) = data.write(&dir, "u32", "npy");
    let expected = report_json(&logits, &labels, NO_ARGS);
    let label_files = [
        ("i8", npy_labels_as::<i8>(&data.labels)),
        ("u8", npy_labels_as::<u8>(&data.labels)),
        ("i16", npy_labels_as::<i16>(&data.labels)),
        ("u16", npy_labels_as::<u16>(&data.labels)),
        ("i32", npy_labels_as::<i32>(&data.labels)),
        ("i64", npy_labels_as::<i64>(&data.labels)),
        ("u64", npy_labels_as::<u64>(&data.labels)),
    ];
    for (dtype, bytes) in label_files {
        let path = dir.write(&format!("labels-{dtype}.npy"), bytes);
        assert_eq!(
            report_json(&logits, &path, NO_ARGS),
            expected,
            "labels {dtype}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Known answers

/// The fitted temperature of `TRUE_TEMPERATURE × calibrated logits`.
#[test]
fn fitted_temperature_recovers_the_true_one() {
    let dir = TempDir::new("known-temperature");
    let data = synthetic_data(LARGE_N, LARGE_K, TRUE_TEMPERATURE, 1);
    let (logits, labels) = data.write(&dir, "large", "npy");
    let json = report_json(&logits, &labels, NO_ARGS);
    assert_eq!(number(&json, "/n_calibration"), (LARGE_N / 2) as f64);
    let temperature = number(&json, "/temperature");
    assert!(
        (temperature / TRUE_TEMPERATURE - 1.0).abs() <= TEMPERATURE_RELATIVE_TOLERANCE,
        "fitted {temperature}, true {TRUE_TEMPERATURE}"
    );
    // The logits are overconfident; scaling must improve the test NLL and ECE.
    assert!(number(&json, "/after/nll") < number(&json, "/before/nll"));
    assert!(number(&json, "/after/ece") < number(&json, "/before/ece"));
}

/// Empirical coverage of `--score <score>` at α = 0.1 on 10,000 test rows.
fn assert_coverage(score: &str) {
    let dir = TempDir::new(&format!("coverage-{score}"));
    let data = synthetic_data(LARGE_N, LARGE_K, TRUE_TEMPERATURE, 2);
    let (logits, labels) = data.write(&dir, "large", "npy");
    let alpha = COVERAGE_ALPHA.to_string();
    let json = report_json(&logits, &labels, &["--score", score, "--alpha", &alpha]);
    assert_eq!(json["conformal"]["score"], score);
    let coverage = number(&json, "/conformal/coverage");
    assert!(
        (COVERAGE_RANGE.0..=COVERAGE_RANGE.1).contains(&coverage),
        "{score}: coverage {coverage} at alpha {COVERAGE_ALPHA}"
    );
}

#[test]
fn lac_covers_at_the_asked_level() {
    assert_coverage("lac");
}

#[test]
fn aps_covers_at_the_asked_level() {
    assert_coverage("aps");
}

#[test]
fn raps_covers_at_the_asked_level() {
    assert_coverage("raps");
}

#[test]
fn saps_covers_at_the_asked_level() {
    assert_coverage("saps");
}

/// The CLI's report equals the library's on the same split: `seeded_split`, a temperature fit
/// on the calibration rows, `evaluate` before and after, and `split_conformal` with the scaled
/// probabilities.
fn assert_matches_library(score: Score, score_args: &[&str]) {
    const SEED: u64 = 7;
    const FRACTION: f64 = 0.4;
    const BINS: usize = 12;
    const ALPHA: f64 = 0.05;
    let dir = TempDir::new(&format!("library-{}", score.name()));
    let data = synthetic_data(3000, 6, 1.7, 3);
    let (logits, labels) = data.write(&dir, "data", "npy");
    let mut args = vec![
        "--seed".to_string(),
        SEED.to_string(),
        "--cal-fraction".to_string(),
        FRACTION.to_string(),
        "--bins".to_string(),
        BINS.to_string(),
        "--binning".to_string(),
        "mass".to_string(),
        "--alpha".to_string(),
        ALPHA.to_string(),
    ];
    args.extend(score_args.iter().map(ToString::to_string));
    let json = report_json(&logits, &labels, &args);

    let (calibration_rows, test_rows) = seeded_split(data.len(), FRACTION, SEED);
    let (calibration_logits, calibration_labels) = data.rows(&calibration_rows);
    let (test_logits, test_labels) = data.rows(&test_rows);
    let calibration_view = Logits::new(&calibration_logits, data.k).unwrap();
    let test_view = Logits::new(&test_logits, data.k).unwrap();
    let fit = calibration::fit_temperature(&calibration_view, &calibration_labels).unwrap();
    let evaluate =
        |t: f64| calibration::evaluate(&test_view, &test_labels, t, BINS, Binning::Mass).unwrap();
    let before = serde_json::to_value(evaluate(1.0)).unwrap();
    let after = serde_json::to_value(evaluate(fit.temperature)).unwrap();
    // Row i of the data file draws uniforms(n, seed)[i], wherever the split puts it (as the page).
    let draws = conformal::uniforms(data.len(), SEED);
    let pick = |rows: &[usize]| rows.iter().map(|&i| draws[i]).collect::<Vec<f64>>();
    let conformal = conformal::split_conformal(
        &calibration::softmax(&calibration_view, fit.temperature).unwrap(),
        &calibration_labels,
        &calibration::softmax(&test_view, fit.temperature).unwrap(),
        &test_labels,
        data.k,
        &score,
        ALPHA,
        conformal::ThresholdRule::Marginal,
        &pick(&calibration_rows),
        &pick(&test_rows),
    )
    .unwrap();

    assert_eq!(
        number(&json, "/n_calibration"),
        calibration_rows.len() as f64
    );
    assert_eq!(number(&json, "/n_test"), test_rows.len() as f64);
    let close = |pointer: &str, expected: f64| {
        let actual = number(&json, pointer);
        assert!(
            (actual - expected).abs() <= LIBRARY_TOLERANCE,
            "{}: {pointer}: CLI {actual}, library {expected}",
            score.name()
        );
    };
    close("/temperature", fit.temperature);
    assert_json_close(&json["before"], &before, LIBRARY_TOLERANCE, "before");
    assert_json_close(&json["after"], &after, LIBRARY_TOLERANCE, "after");
    for (part, t) in [("before", 1.0), ("after", fit.temperature)] {
        let (confidence, correct) = calibration::confidences(&test_view, &test_labels, t).unwrap();
        let smooth = smooth_calibration::smooth_ece(&confidence, &correct).unwrap();
        close(&format!("/{part}/smece"), smooth.smece);
        close(&format!("/{part}/smece_bandwidth"), smooth.bandwidth);
    }
    assert_eq!(json["conformal"]["score"], score.name());
    assert_eq!(json["conformal"]["randomized"], score.is_randomized());
    let metrics = &conformal.metrics;
    close("/conformal/qhat", conformal.qhat[0]);
    close("/conformal/coverage", metrics.coverage);
    close("/conformal/average_set_size", metrics.average_set_size);
    close("/conformal/singleton_rate", metrics.singleton_rate);
    close("/conformal/singleton_hit_rate", metrics.singleton_hit_rate);
    close("/conformal/empty_rate", metrics.empty_rate);
}

/// `--pac EPS,DELTA`: `conformal.qhat` is the `conformal.pac_k`-th smallest calibration score,
/// `k` the rank that exact rational arithmetic gives (`scripts/conformal-reference.py`), and
/// the threshold is above the marginal one at α = EPS.
#[test]
fn pac_threshold_is_the_pac_k_th_calibration_score() {
    const N: usize = 1000;
    let reference: Value = serde_json::from_str(include_str!("fixtures/conformal/pac-ranks.json"))
        .expect("the PAC fixture");
    let case = reference["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["n"] == N && case["epsilon"] == 0.1 && case["delta"] == 0.05)
        .expect("the fixture's case n = 1000, 0.1, 0.05");
    let expected_k = case["k"].as_u64().unwrap() as usize;
    let dir = TempDir::new("pac");
    let calibration_data = synthetic_data(N, 5, 1.7, 11);
    let (logits, labels) = calibration_data.write(&dir, "cal", "npy");
    let (test_logits, test_labels) = synthetic_data(3000, 5, 1.7, 12).write(&dir, "test", "npy");
    let files = [
        OsStr::new("--test-logits"),
        test_logits.as_os_str(),
        OsStr::new("--test-labels"),
        test_labels.as_os_str(),
        OsStr::new("--score"),
        OsStr::new("lac"),
    ];
    let mut pac_args = files.to_vec();
    pac_args.extend([OsStr::new("--pac"), OsStr::new("0.1,0.05")]);
    let json = report_json(&logits, &labels, &pac_args);
    let conformal = &json["conformal"];
    assert_eq!(conformal["pac_k"].as_u64(), Some(expected_k as u64));
    assert_eq!(number(&json, "/conformal/alpha"), 0.1);
    assert_eq!(number(&json, "/conformal/pac_delta"), 0.05);

    let view = Logits::new(&calibration_data.logits, 5).unwrap();
    let probabilities = calibration::softmax(&view, number(&json, "/temperature")).unwrap();
    let scores: Vec<f64> = probabilities
        .chunks(5)
        .zip(&calibration_data.labels)
        .map(|(p, &y)| 1.0 - p[y as usize])
        .collect();
    let qhat = number(&json, "/conformal/qhat");
    let below = scores.iter().filter(|&&s| s < qhat).count();
    let at_or_below = scores.iter().filter(|&&s| s <= qhat).count();
    assert!(
        below < expected_k && expected_k <= at_or_below,
        "qhat {qhat}: {below} scores below, {at_or_below} at or below, k = {expected_k}"
    );

    let marginal = report_json(&logits, &labels, &files);
    assert!(marginal["conformal"].get("pac_k").is_none());
    assert!(qhat > number(&marginal, "/conformal/qhat"));
    assert!(number(&json, "/conformal/coverage") >= number(&marginal, "/conformal/coverage"));

    let table = report(&logits, &labels, &pac_args);
    assert_success(&table);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("coverage >= 0.9 with probability >= 0.95"),
        "{text}"
    );
    assert!(text.contains(&format!("pac_k{expected_k:>25}")), "{text}");
}

#[test]
fn bad_pac_levels_and_too_few_rows_for_them_are_refused() {
    let dir = TempDir::new("pac-refused");
    let (logits, labels) = small_data(64).write(&dir, "data", "csv");
    for bad in ["0.1", "0.1,1", "0,0.1", "a,0.1", "0.1,0.05,0.2"] {
        assert_refused(
            &report(&logits, &labels, &["--pac", bad]),
            &["--pac", bad, "EPS,DELTA"],
        );
    }
    for other in [["--alpha", "0.2"], ["--mondrian", "--json"]] {
        let mut args = vec!["--pac", "0.1,0.1"];
        args.extend(other);
        assert_refused(&report(&logits, &labels, &args), &["--pac", other[0]]);
    }
    // 32 calibration rows: 0.9³² = 0.034 > δ = 0.01 (the smallest n is 44).
    assert_refused(
        &report(&logits, &labels, &["--pac", "0.1,0.01"]),
        &[&shown(&logits), "32 calibration rows", "at least 44"],
    );
    assert_success(&report(&logits, &labels, &["--pac", "0.1,0.05"]));
}

/// `--selective RISK` equals the library's selective report on the same parts at the JSON's
/// temperature; with two classes, the rows answered do not depend on the temperature.
#[test]
fn selective_classification_matches_the_library_and_ignores_the_temperature_with_two_classes() {
    use calibra::selective;
    let dir = TempDir::new("selective");
    let calibration_data = synthetic_data(800, 2, 1.5, 21);
    let test_data = synthetic_data(1200, 2, 1.5, 22);
    let (logits, labels) = calibration_data.write(&dir, "cal", "csv");
    let (test_logits, test_labels) = test_data.write(&dir, "test", "csv");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--test-logits",
            test_logits.to_str().unwrap(),
            "--test-labels",
            test_labels.to_str().unwrap(),
            "--selective",
            "0.05",
        ];
        args.extend(extra);
        report_json(&logits, &labels, &args)
    };
    let fitted = run(&[]);
    let temperature = number(&fitted, "/temperature");
    let at = |data: &Data| {
        let view = Logits::new(&data.logits, 2).unwrap();
        calibration::confidences(&view, &data.labels, temperature).unwrap()
    };
    let (calibration_confidence, calibration_correct) = at(&calibration_data);
    let (test_confidence, test_correct) = at(&test_data);
    let expected = selective::selective_report(
        (&calibration_confidence, &calibration_correct),
        (&test_confidence, &test_correct),
        0.05,
    )
    .unwrap();
    assert_json_close(
        &fitted["selective"],
        &serde_json::to_value(&expected).unwrap(),
        LIBRARY_TOLERANCE,
        "selective",
    );
    assert!(expected.coverage > 0.0 && expected.coverage < 1.0);
    for given in ["0.5", "3"] {
        let scaled = run(&["--temperature", given]);
        assert_ne!(
            scaled["selective"]["threshold"],
            fitted["selective"]["threshold"]
        );
        for key in ["coverage", "selective_risk", "answered_error_rate", "aurc"] {
            assert_eq!(
                scaled["selective"][key], fitted["selective"][key],
                "{key} at T = {given}"
            );
        }
    }
    let table = report(&logits, &labels, &["--selective", "0.05"]);
    assert_success(&table);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("conformal risk control at risk level 0.05"),
        "{text}"
    );
    assert!(text.lines().any(|line| line.starts_with("aurc ")), "{text}");
}

#[test]
fn bad_risk_levels_and_too_few_rows_for_them_are_refused() {
    let dir = TempDir::new("selective-refused");
    let (logits, labels) = small_data(16).write(&dir, "data", "csv");
    for bad in ["0", "1", "-0.1", "NaN"] {
        assert_refused(
            &report(&logits, &labels, &["--alpha", "0.2", "--selective", bad]),
            &["--selective", "not a risk level"],
        );
    }
    // 8 calibration rows: ⌊0.1 · 9⌋ = 0 wrong answers could ever be allowed.
    assert_refused(
        &report(&logits, &labels, &["--alpha", "0.2", "--selective", "0.1"]),
        &[
            &shown(&logits),
            "8 calibration rows",
            "--selective 0.1",
            "at least 9",
        ],
    );
    assert_success(&report(
        &logits,
        &labels,
        &["--alpha", "0.2", "--selective", "0.2"],
    ));
}

/// Synthetic calibration and test files of `k` classes and `report --json` on them, LAC sets
/// at `--seed 4`, with `extra` options.
struct TestFilesRun {
    calibration: Data,
    test: Data,
    logits: PathBuf,
    labels: PathBuf,
    args: Vec<String>,
    json: Value,
    _dir: TempDir,
}

impl TestFilesRun {
    fn new(name: &str, k: usize, sizes: (usize, usize), extra: &[&str]) -> Self {
        let dir = TempDir::new(name);
        let calibration = synthetic_data(sizes.0, k, 1.3, 31);
        let test = synthetic_data(sizes.1, k, 1.3, 32);
        let (logits, labels) = calibration.write(&dir, "cal", "npy");
        let (test_logits, test_labels) = test.write(&dir, "test", "npy");
        let args: Vec<String> = ["--test-logits", test_logits.to_str().unwrap()]
            .into_iter()
            .chain(["--test-labels", test_labels.to_str().unwrap()])
            .chain(["--score", "lac", "--seed", "4"])
            .chain(extra.iter().copied())
            .map(String::from)
            .collect();
        let json = report_json(&logits, &labels, &args);
        Self {
            calibration,
            test,
            logits,
            labels,
            args,
            json,
            _dir: dir,
        }
    }

    /// Softmax of `data`'s logits at the report's temperature.
    fn probabilities(&self, data: &Data) -> Vec<f64> {
        let view = Logits::new(&data.logits, data.k).unwrap();
        calibration::softmax(&view, number(&self.json, "/temperature")).unwrap()
    }

    /// The library's split conformal LAC sets at α = 0.1 on the same parts.
    fn library_sets(&self, rule: conformal::ThresholdRule) -> conformal::ConformalReport {
        conformal::split_conformal(
            &self.probabilities(&self.calibration),
            &self.calibration.labels,
            &self.probabilities(&self.test),
            &self.test.labels,
            self.test.k,
            &Score::Lac,
            0.1,
            rule,
            &vec![1.0; self.calibration.len()],
            &vec![1.0; self.test.len()],
        )
        .unwrap()
    }

    /// The same options without `--json`: the table.
    fn table(&self) -> String {
        let output = report(&self.logits, &self.labels, &self.args);
        assert_success(&output);
        String::from_utf8(output.stdout).unwrap()
    }
}

/// `--worst-slab` equals the library's worst-slab coverage of the CLI's own sets over slabs of
/// the test logits, with the library's noise floors.
#[test]
fn worst_slab_coverage_and_noise_floors_match_the_library() {
    use calibra::conformal::worst_slab::{self, DELTA, DIRECTIONS, FLOOR_REPETITIONS};
    let run = TestFilesRun::new("worst-slab", 4, (600, 400), &["--worst-slab"]);
    let sets = run.library_sets(conformal::ThresholdRule::Marginal);
    let covered: Vec<bool> = (0..)
        .zip(&run.test.labels)
        .map(|(row, &label)| sets.sets.contains(row, label))
        .collect();
    let directions = worst_slab::random_directions(DIRECTIONS, 4, 4);
    let worst =
        worst_slab::worst_slab_coverage(&run.test.logits, 4, &covered, &directions, DELTA).unwrap();
    let floor = worst_slab::worst_slab_noise_floor(
        &run.test.logits,
        4,
        &directions,
        DELTA,
        0.1,
        FLOOR_REPETITIONS,
        4,
    )
    .unwrap();
    let measured = &run.json["conditional_coverage"];
    assert_eq!(number(measured, "/worst_slab_coverage"), worst.coverage);
    assert_eq!(number(measured, "/worst_slab_rows"), worst.count as f64);
    assert_eq!(number(measured, "/worst_slab_noise_floor"), floor);
    assert_eq!(number(measured, "/covgap"), sets.metrics.covgap);
    let covgap_floor = number(measured, "/covgap_noise_floor");
    assert!(covgap_floor > 0.0 && covgap_floor < 0.1, "{covgap_floor}");
    // A calibrated model's LAC sets cover well on average but not in every slab.
    assert!(worst.coverage < 0.9, "{}", worst.coverage);
    let text = run.table();
    assert!(
        text.contains("worst-slab coverage (") && text.contains("noise floor"),
        "{text}"
    );
}

/// `--clustered 2` equals the library's clustered thresholds and sets on the same parts.
#[test]
fn clustered_thresholds_and_sets_match_the_library() {
    let run = TestFilesRun::new("clustered", 6, (2400, 1000), &["--clustered", "2"]);
    let expected = run.library_sets(conformal::ThresholdRule::Clustered {
        clusters: Some(2),
        seed: 4,
    });
    // The JSON's temperature reads back within an ulp, so the thresholds may move by one.
    assert_json_close(
        &run.json["conformal"]["qhat_per_class"],
        &serde_json::to_value(&expected.qhat).unwrap(),
        LIBRARY_TOLERANCE,
        "qhat_per_class",
    );
    assert_eq!(
        number(&run.json, "/conformal/coverage"),
        expected.metrics.coverage
    );
    assert_eq!(
        number(&run.json, "/conformal/covgap"),
        expected.metrics.covgap
    );
    let scores = conformal::true_label_scores(
        &run.probabilities(&run.calibration),
        &run.calibration.labels,
        6,
        &Score::Lac,
        &[1.0; 2400],
    )
    .unwrap();
    let found = conformal::clustered::clustered_thresholds(
        &scores,
        &run.calibration.labels,
        6,
        0.1,
        Some(2),
        4,
    )
    .unwrap();
    let clusters = &run.json["conformal"]["clusters"];
    assert_eq!(clusters["clusters"], 2);
    assert_eq!(
        clusters["cluster_of_class"],
        serde_json::to_value(&found.cluster_of_class).unwrap()
    );
    assert_eq!(
        number(clusters, "/clustering_rows"),
        found.clustering_rows as f64
    );
    assert!(found.cluster_of_class.iter().all(Option::is_some));
    let text = run.table();
    assert!(
        text.contains("clustered (one qhat per cluster of classes)"),
        "{text}"
    );
    assert!(text.contains("2 clusters asked"), "{text}");
    for other in [vec!["--mondrian"], vec!["--pac", "0.1,0.1"]] {
        let mut refused = vec!["--clustered"];
        refused.extend(&other);
        assert_refused(
            &report(&run.logits, &run.labels, &refused),
            &["--clustered", other[0]],
        );
    }
}

/// `--aci-gamma` on test rows whose logits grow overconfident as the stream goes on (their
/// labels stay drawn from the first logits): the adaptive run
/// equals the library's, keeps its long-run coverage within the bound, and fixed split
/// conformal falls short.
#[test]
fn adaptive_conformal_inference_matches_the_library_on_a_drifting_stream() {
    let dir = TempDir::new("aci");
    let calibration = synthetic_data(1000, 4, 1.0, 51);
    let mut test = synthetic_data(3000, 4, 1.0, 52);
    for (row, logits) in test.logits.chunks_mut(4).enumerate() {
        let sharpen = 1.0 + 4.0 * row as f32 / 3000.0;
        logits.iter_mut().for_each(|z| *z *= sharpen);
    }
    let (logits, labels) = calibration.write(&dir, "cal", "csv");
    let (test_logits, test_labels) = test.write(&dir, "test", "csv");
    let args = [
        "--test-logits",
        test_logits.to_str().unwrap(),
        "--test-labels",
        test_labels.to_str().unwrap(),
        "--score",
        "lac",
        "--aci-gamma",
        "0.01",
    ];
    let json = report_json(&logits, &labels, &args);
    let temperature = number(&json, "/temperature");
    let probabilities = |data: &Data| {
        calibration::softmax(&Logits::new(&data.logits, 4).unwrap(), temperature).unwrap()
    };
    let calibration_scores = conformal::true_label_scores(
        &probabilities(&calibration),
        &calibration.labels,
        4,
        &Score::Lac,
        &[1.0; 1000],
    )
    .unwrap();
    let stream =
        conformal::all_label_scores(&probabilities(&test), 4, &Score::Lac, &[1.0; 3000]).unwrap();
    let run = conformal::adaptive::adaptive_conformal(
        &calibration_scores,
        &stream,
        &test.labels,
        4,
        0.1,
        0.01,
    )
    .unwrap();
    let aci = &json["aci"];
    for (key, expected) in [
        ("coverage", run.coverage),
        ("average_set_size", run.average_set_size),
        ("miscoverage_bound", run.miscoverage_bound),
        ("fixed_coverage", run.fixed_coverage),
        ("fixed_average_set_size", run.fixed_average_set_size),
        ("final_alpha", run.steps[2999].alpha),
    ] {
        let actual = number(aci, &format!("/{key}"));
        assert!(
            (actual - expected).abs() <= LIBRARY_TOLERANCE,
            "{key}: {actual} against {expected}"
        );
    }
    assert!((1.0 - run.coverage - 0.1).abs() <= run.miscoverage_bound);
    assert!(
        run.fixed_coverage < 0.85,
        "fixed coverage {}",
        run.fixed_coverage
    );
    let table = report(&logits, &labels, &args);
    assert_success(&table);
    assert!(String::from_utf8_lossy(&table.stdout).contains("adaptive conformal inference"));
    for gamma in ["0", "-0.1", "NaN"] {
        assert_refused(
            &report(&logits, &labels, &["--aci-gamma", gamma]),
            &["--aci-gamma", "gamma"],
        );
    }
}

/// `--covariate-shift` against unlabelled rows that are the calibration rows themselves: the
/// domain classifier finds nothing to tell apart, every weight is 1, and the weighted sets are
/// split conformal's; against logits moved the weights move and the effective sample size
/// falls; a file of another class count and `--pac` are refused.
#[test]
fn weighted_conformal_with_equal_domains_is_split_conformal() {
    let dir = TempDir::new("weighted");
    let calibration = synthetic_data(1000, 4, 1.0, 61);
    let test = synthetic_data(1000, 4, 1.0, 62);
    let (logits, labels) = calibration.write(&dir, "cal", "csv");
    let (test_logits, test_labels) = test.write(&dir, "test", "csv");
    let with = |unlabelled: &Path| {
        report_json(
            &logits,
            &labels,
            &[
                "--test-logits",
                test_logits.to_str().unwrap(),
                "--test-labels",
                test_labels.to_str().unwrap(),
                "--score",
                "lac",
                "--covariate-shift",
                unlabelled.to_str().unwrap(),
            ],
        )
    };
    let json = with(&logits);
    let weighted = &json["weighted"];
    assert_eq!(weighted["n_unlabelled"], 1000);
    assert_eq!(weighted["converged"], true);
    assert_eq!(number(weighted, "/inverse_penalty"), 1.0);
    assert_eq!(
        number(weighted, "/coverage"),
        number(&json, "/conformal/coverage")
    );
    assert_eq!(
        number(weighted, "/average_set_size"),
        number(&json, "/conformal/average_set_size")
    );
    assert!((number(weighted, "/effective_sample_size") - 1000.0).abs() < 1e-6);
    assert_eq!(number(weighted, "/infinite_share"), 0.0);

    // The first class's logit raised by 2: a mean shift, which the logistic model sees.
    let moved_logits: Vec<f32> = calibration
        .logits
        .iter()
        .enumerate()
        .map(|(i, z)| if i % 4 == 0 { z + 2.0 } else { *z })
        .collect();
    let moved_file = dir.write("sharper.csv", text_rows(&moved_logits, 4, ","));
    let moved = with(&moved_file);
    let ess = number(&moved["weighted"], "/effective_sample_size");
    assert!((1.0..900.0).contains(&ess), "effective sample size {ess}");
    let table = report(
        &logits,
        &labels,
        &["--covariate-shift", moved_file.to_str().unwrap()],
    );
    assert_success(&table);
    assert!(
        String::from_utf8_lossy(&table.stdout).contains("weighted conformal under covariate shift")
    );

    let three = dir.write("three.csv", "1,2,3\n4,5,6\n");
    assert_refused(
        &report(
            &logits,
            &labels,
            &["--covariate-shift", three.to_str().unwrap()],
        ),
        &["three.csv", "3 classes", "4"],
    );
    assert_refused(
        &report(
            &logits,
            &labels,
            &[
                "--covariate-shift",
                moved_file.to_str().unwrap(),
                "--pac",
                "0.1,0.1",
            ],
        ),
        &["--covariate-shift", "--pac"],
    );
}

#[test]
fn lac_matches_the_library() {
    assert_matches_library(Score::Lac, &["--score", "lac"]);
}

#[test]
fn deterministic_aps_matches_the_library() {
    assert_matches_library(
        Score::Aps { randomized: false },
        &["--score", "aps", "--randomized", "false"],
    );
}

#[test]
fn randomized_raps_matches_the_library() {
    assert_matches_library(
        Score::Raps {
            lambda: 0.05,
            k_reg: 2,
            randomized: true,
        },
        &["--score", "raps", "--lambda", "0.05", "--k-reg", "2"],
    );
}

#[test]
fn randomized_saps_matches_the_library() {
    assert_matches_library(
        Score::Saps {
            lambda: 0.3,
            randomized: true,
        },
        &["--score", "saps", "--lambda", "0.3"],
    );
}

// ---------------------------------------------------------------------------------------------
// Class-conditional (Mondrian) thresholds

/// `--mondrian` equals the library on the same split: per-class thresholds of
/// `class_conditional_thresholds` on the calibration rows' true-label scores (with the draws the
/// CLI documents, the first `n_cal` of `uniforms(n_cal + n_test, seed)`), and the `set_metrics`
/// of the sets `prediction_sets` builds with them on the test rows.
#[test]
fn mondrian_matches_the_library() {
    const SEED: u64 = 5;
    const ALPHA: f64 = 0.05;
    let dir = TempDir::new("mondrian-library");
    let data = synthetic_data(3000, 6, 1.7, 4);
    let (logits, labels) = data.write(&dir, "data", "npy");
    let (calibration_rows, test_rows) = seeded_split(data.len(), 0.5, SEED);
    let (calibration_logits, calibration_labels) = data.rows(&calibration_rows);
    let (test_logits, test_labels) = data.rows(&test_rows);
    let calibration_view = Logits::new(&calibration_logits, data.k).unwrap();
    let test_view = Logits::new(&test_logits, data.k).unwrap();
    let temperature = calibration::fit_temperature(&calibration_view, &calibration_labels)
        .unwrap()
        .temperature;
    let calibration_probabilities = calibration::softmax(&calibration_view, temperature).unwrap();
    let test_probabilities = calibration::softmax(&test_view, temperature).unwrap();
    // Row i of the file draws uniforms(n, seed)[i], wherever the split puts it (as the page).
    let draws = conformal::uniforms(data.len(), SEED);
    let pick = |rows: &[usize]| rows.iter().map(|&i| draws[i]).collect::<Vec<f64>>();
    let (calibration_draws, test_draws) = (&pick(&calibration_rows)[..], &pick(&test_rows)[..]);
    let raps = Score::Raps {
        lambda: 0.05,
        k_reg: 2,
        randomized: true,
    };
    for (score, score_args) in [
        (Score::Lac, &["--score", "lac"][..]),
        (
            raps,
            &["--score", "raps", "--lambda", "0.05", "--k-reg", "2"][..],
        ),
    ] {
        let seed = SEED.to_string();
        let alpha = ALPHA.to_string();
        let mut args = vec!["--mondrian", "--seed", &seed, "--alpha", &alpha];
        args.extend(score_args);
        let json = report_json(&logits, &labels, &args);

        let scores = conformal::true_label_scores(
            &calibration_probabilities,
            &calibration_labels,
            data.k,
            &score,
            calibration_draws,
        )
        .unwrap();
        let qhats =
            conformal::class_conditional_thresholds(&scores, &calibration_labels, data.k, ALPHA)
                .unwrap();
        let sets = conformal::prediction_sets(
            &test_probabilities,
            data.k,
            &score,
            test_draws,
            &conformal::Thresholds::ClassConditional(qhats.clone()),
        )
        .unwrap();
        let metrics = conformal::set_metrics(&sets, &test_labels, ALPHA).unwrap();

        let name = score.name();
        let conformal = &json["conformal"];
        assert!(conformal.get("qhat").is_none(), "{name}: {conformal}");
        assert!(qhats.iter().all(|q| q.is_finite()), "{name}: {qhats:?}");
        let expected = serde_json::to_value(&qhats).unwrap();
        let at = format!("{name} qhat_per_class");
        assert_json_close(
            &conformal["qhat_per_class"],
            &expected,
            LIBRARY_TOLERANCE,
            &at,
        );
        let expected = serde_json::to_value(&metrics.per_class_coverage).unwrap();
        let at = format!("{name} per_class_coverage");
        assert_json_close(
            &conformal["per_class_coverage"],
            &expected,
            LIBRARY_TOLERANCE,
            &at,
        );
        for (key, expected) in [
            ("coverage", metrics.coverage),
            ("average_set_size", metrics.average_set_size),
            ("singleton_rate", metrics.singleton_rate),
            ("empty_rate", metrics.empty_rate),
            ("covgap", metrics.covgap),
        ] {
            let actual = number(conformal, &format!("/{key}"));
            assert!(
                (actual - expected).abs() <= LIBRARY_TOLERANCE,
                "{name}: {key}: CLI {actual}, library {expected}"
            );
        }
    }
}

/// Standard deviations of one split's coverage allowed below `1 − α` (and above its mean).
const CLASS_COVERAGE_DEVIATIONS: f64 = 3.0;

/// `--mondrian --score <score>` covers every class at α = 0.1 on 10,000 test rows (about 1,000
/// of each of the 10 classes).
///
/// Tolerance, per class: with `n` calibration and `m` test rows of the class, one split's class
/// coverage follows `BetaBinomial(m, k, n + 1 − k)/m` with `k = ⌈(n + 1)(1 − α)⌉` (Vovk, ACML
/// 2012), whose mean `k/(n + 1)` is at least `1 − α` and whose variance is
/// `ab(a + b + m) / ((a + b)²(a + b + 1)m)` with `a = k`, `b = n + 1 − k`: about 1.3 points here.
/// The check is `1 − α − 3·sd ≤ coverage ≤ k/(n + 1) + 3·sd`; the scores are continuous (no
/// ties), so the upper side holds too. Each side fails by chance with probability about 0.13%.
fn assert_class_coverage(score: &str) {
    let dir = TempDir::new(&format!("mondrian-coverage-{score}"));
    let data = synthetic_data(LARGE_N, LARGE_K, TRUE_TEMPERATURE, 2);
    let (logits, labels) = data.write(&dir, "large", "npy");
    let alpha = COVERAGE_ALPHA.to_string();
    let json = report_json(
        &logits,
        &labels,
        &["--mondrian", "--score", score, "--alpha", &alpha],
    );
    let (calibration_rows, test_rows) = seeded_split(data.len(), 0.5, 0);
    let count = |rows: &[usize], class: usize| {
        rows.iter()
            .filter(|&&i| data.labels[i] as usize == class)
            .count()
    };
    let coverages = json["conformal"]["per_class_coverage"]
        .as_array()
        .expect("per_class_coverage is a list");
    assert_eq!(coverages.len(), LARGE_K);
    for (class, coverage) in coverages.iter().enumerate() {
        let coverage = coverage.as_f64().expect("every class has test rows");
        let (n, m) = (count(&calibration_rows, class), count(&test_rows, class));
        let k = conformal::quantile_rank(n, COVERAGE_ALPHA).unwrap();
        let (a, b, m) = (k as f64, (n + 1 - k) as f64, m as f64);
        let variance = a * b * (a + b + m) / ((a + b).powi(2) * (a + b + 1.0) * m);
        let tolerance = CLASS_COVERAGE_DEVIATIONS * variance.sqrt();
        let (lower, upper) = (1.0 - COVERAGE_ALPHA - tolerance, a / (a + b) + tolerance);
        assert!(
            (lower..=upper).contains(&coverage),
            "{score}: class {class} ({n} calibration, {m} test rows): coverage {coverage} \
             outside [{lower}, {upper}]"
        );
    }
}

#[test]
fn lac_mondrian_covers_every_class() {
    assert_class_coverage("lac");
}

#[test]
fn aps_mondrian_covers_every_class() {
    assert_class_coverage("aps");
}

#[test]
fn raps_mondrian_covers_every_class() {
    assert_class_coverage("raps");
}

#[test]
fn saps_mondrian_covers_every_class() {
    assert_class_coverage("saps");
}

/// A class with fewer calibration rows than α needs gets `q̂ = +∞`, written `null` (JSON has no
/// infinity) and `inf` in the table, and its label is in every set; a class without test rows
/// has a `null` coverage. A calibration part too small for any finite threshold is still
/// refused.
#[test]
fn mondrian_infinite_threshold_and_missing_class_are_null() {
    let dir = TempDir::new("mondrian-null");
    let data = synthetic_data(600, 4, 1.0, 6);
    let (first, second): (Vec<usize>, Vec<usize>) = (0..data.len()).partition(|&i| i < 300);
    // Calibration: 5 rows of class 3 (α = 0.1 needs 9). Test: no row of class 2.
    let calibration_rows: Vec<usize> = first
        .iter()
        .copied()
        .filter(|&i| data.labels[i] != 3)
        .chain(
            first
                .iter()
                .copied()
                .filter(|&i| data.labels[i] == 3)
                .take(5),
        )
        .collect();
    let test_rows: Vec<usize> = second
        .into_iter()
        .filter(|&i| data.labels[i] != 2)
        .collect();
    let part = |stem: &str, rows: &[usize]| {
        let (logits, labels) = data.rows(rows);
        Data {
            logits,
            labels,
            k: data.k,
        }
        .write(&dir, stem, "csv")
    };
    let (logits, labels) = part("cal", &calibration_rows);
    let (test_logits, test_labels) = part("test", &test_rows);
    let args = [
        OsStr::new("--mondrian"),
        OsStr::new("--test-logits"),
        test_logits.as_os_str(),
        OsStr::new("--test-labels"),
        test_labels.as_os_str(),
    ];
    let json = report_json(&logits, &labels, &args);
    let conformal = &json["conformal"];
    let qhats = conformal["qhat_per_class"].as_array().unwrap();
    assert_eq!(qhats.len(), 4);
    assert!(qhats[..3].iter().all(Value::is_number), "{conformal}");
    assert!(qhats[3].is_null(), "{conformal}");
    let coverages = conformal["per_class_coverage"].as_array().unwrap();
    assert!(coverages[2].is_null(), "{conformal}");
    assert_eq!(coverages[3].as_f64(), Some(1.0), "{conformal}");

    let output = report(&logits, &labels, &args);
    assert_success(&output);
    let stdout = String::from_utf8(output.stdout).unwrap();
    let class_line = |class: &str| {
        stdout
            .lines()
            .find(|line| line.split_whitespace().next() == Some(class))
            .unwrap_or_else(|| panic!("no line for class {class} in {stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        class_line("3")[1..4],
        ["5", "inf", &count_of(&data, &test_rows, 3)]
    );
    assert_eq!(class_line("3")[4], "1.0000");
    assert_eq!(class_line("2")[3..], ["0", "-"]);
    assert!(stdout.contains("fewer than 9 calibration rows"), "{stdout}");

    let (small_logits, small_labels) = small_data(16).write(&dir, "small", "csv");
    assert_refused(
        &report(&small_logits, &small_labels, &["--mondrian"]),
        &[&shown(&small_logits), "8 calibration rows", "too few"],
    );
}

/// How many of `rows` have label `class`, as the table prints it.
fn count_of(data: &Data, rows: &[usize], class: u32) -> String {
    rows.iter()
        .filter(|&&i| data.labels[i] == class)
        .count()
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// Text format

/// The report of the small fixture written as plain comma-separated rows.
fn plain_csv_report(dir: &TempDir, data: &Data) -> Value {
    let (logits, labels) = data.write(dir, "plain", "csv");
    report_json(&logits, &labels, &["--alpha", SMALL_ALPHA])
}

#[test]
fn header_row_is_skipped() {
    let dir = TempDir::new("text-header");
    let data = small_data(12);
    let expected = plain_csv_report(&dir, &data);
    let logits = dir.write(
        "header.csv",
        "class_0,class_1,class_2\n".to_string() + &text_rows(&data.logits, 3, ","),
    );
    let labels = dir.path("plain-labels.csv");
    assert_eq!(
        report_json(&logits, &labels, &["--alpha", SMALL_ALPHA]),
        expected
    );
    // So is a spreadsheet's byte-order mark before it, or before the first row.
    let bom = dir.write(
        "bom.csv",
        "\u{feff}".to_string() + &text_rows(&data.logits, 3, ","),
    );
    assert_eq!(
        report_json(&bom, &labels, &["--alpha", SMALL_ALPHA]),
        expected
    );
}

#[test]
fn whitespace_separated_txt_is_read() {
    let dir = TempDir::new("text-whitespace");
    let data = small_data(12);
    let expected = plain_csv_report(&dir, &data);
    let spaced = text_rows(&data.logits, 3, " \t ").replace('\n', "  \n");
    let logits = dir.write("logits.txt", spaced);
    let labels = dir.write("labels.txt", text_labels(&data.labels));
    assert_eq!(
        report_json(&logits, &labels, &["--alpha", SMALL_ALPHA]),
        expected
    );
}

#[test]
fn blank_lines_are_ignored() {
    let dir = TempDir::new("text-blank");
    let data = small_data(12);
    let expected = plain_csv_report(&dir, &data);
    let with_blanks = |text: String| -> String {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = String::from("\n");
        for (i, line) in lines.iter().enumerate() {
            out += line;
            out += if i % 3 == 0 { "\n\n   \n" } else { "\r\n" };
        }
        out
    };
    let logits = dir.write("logits.csv", with_blanks(text_rows(&data.logits, 3, ", ")));
    let labels = dir.write("labels.csv", with_blanks(text_labels(&data.labels)));
    assert_eq!(
        report_json(&logits, &labels, &["--alpha", SMALL_ALPHA]),
        expected
    );
}

// ---------------------------------------------------------------------------------------------
// Table output

#[test]
fn table_output_shows_temperature_and_coverage() {
    let dir = TempDir::new("table");
    let (logits, labels) = small_data(40).write(&dir, "ok", "csv");
    let output = report(&logits, &labels, NO_ARGS);
    assert_success(&output);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.lines().any(|l| l.starts_with("temperature T = ")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("coverage ")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("accuracy ")),
        "{stdout}"
    );
    for metric in ["smece ", "smece_bandwidth "] {
        assert!(
            stdout.lines().any(|l| l.starts_with(metric)),
            "{metric}in {stdout}"
        );
    }
    assert!(
        serde_json::from_str::<Value>(&stdout).is_err(),
        "a table, not JSON"
    );
    let given = report(&logits, &labels, &["--temperature", "1.5"]);
    assert_success(&given);
    let stdout = String::from_utf8(given.stdout).unwrap();
    assert!(
        stdout.contains("temperature T = 1.5000 (given)"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------------
// `calibra ood`

/// `calibra ood --id-logits <id> --ood-logits <ood> <extra...>`.
fn ood<S: AsRef<OsStr>>(id_logits: &Path, ood_logits: &Path, extra: &[S]) -> Output {
    let mut args = vec![
        OsStr::new("ood"),
        OsStr::new("--id-logits"),
        id_logits.as_os_str(),
        OsStr::new("--ood-logits"),
        ood_logits.as_os_str(),
    ];
    args.extend(extra.iter().map(AsRef::as_ref));
    calibra(&args)
}

/// `ood` with `--json`, which must succeed; the parsed object.
fn ood_json<S: AsRef<OsStr>>(id_logits: &Path, ood_logits: &Path, extra: &[S]) -> Value {
    let mut args: Vec<&OsStr> = extra.iter().map(AsRef::as_ref).collect();
    args.push(OsStr::new("--json"));
    let output = ood(id_logits, ood_logits, &args);
    assert_success(&output);
    serde_json::from_slice(&output.stdout).expect("--json prints one JSON object")
}

/// Writes row-major logits with `k` classes as a float32 `.npy` or as comma-separated rows,
/// after `file`'s extension.
fn write_logits(dir: &TempDir, file: &str, values: &[f32], k: usize) -> PathBuf {
    if file.ends_with(".npy") {
        dir.write(file, npy_logits(values, k))
    } else {
        dir.write(file, text_rows(values, k, ","))
    }
}

/// Valid in-distribution (12 rows) and OOD (9 rows) logits of 3 classes, as `id.<ext>` and
/// `ood.<ext>`.
fn ood_files(dir: &TempDir, ext: &str) -> (PathBuf, PathBuf) {
    (
        write_logits(dir, &format!("id.{ext}"), &small_data(12).logits, 3),
        write_logits(dir, &format!("ood.{ext}"), &small_data(9).logits, 3),
    )
}

/// The keys of a JSON object, sorted.
fn keys(json: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {json}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[test]
fn ood_missing_files_are_refused_with_their_path() {
    let dir = TempDir::new("ood-missing");
    for ext in ["csv", "npy"] {
        let (id_logits, ood_logits) = ood_files(&dir, ext);
        let absent = dir.path(&format!("absent.{ext}"));
        assert_refused(&ood(&absent, &ood_logits, NO_ARGS), &[&shown(&absent)]);
        assert_refused(&ood(&id_logits, &absent, NO_ARGS), &[&shown(&absent)]);
    }
}

#[test]
fn ood_unreadable_files_are_refused() {
    let dir = TempDir::new("ood-garbage");
    let (id_logits, ood_logits) = ood_files(&dir, "npy");
    let garbage = dir.write("garbage.npy", "1,2,3\n");
    assert_refused(
        &ood(&garbage, &ood_logits, NO_ARGS),
        &[&shown(&garbage), "not a .npy file"],
    );
    let mut bytes = npy_logits(&small_data(9).logits, 3);
    bytes.truncate(bytes.len() - 10);
    let truncated = dir.write("truncated.npy", bytes);
    assert_refused(
        &ood(&id_logits, &truncated, NO_ARGS),
        &[
            &shown(&truncated),
            "needs 108 bytes of data, but the file has 98",
        ],
    );
    let words = dir.write("words.csv", "1,2,3\n0,abc,1\n");
    assert_refused(
        &ood(&id_logits, &words, NO_ARGS),
        &[&shown(&words), "line 2", "'abc' is not a number"],
    );
    let json = dir.write("logits.json", "[[1, 2, 3]]");
    assert_refused(
        &ood(&json, &ood_logits, NO_ARGS),
        &[&shown(&json), "unknown file type"],
    );
}

#[test]
fn ood_empty_files_are_refused() {
    let dir = TempDir::new("ood-empty");
    let (id_logits, ood_logits) = ood_files(&dir, "csv");
    let blank = dir.write("blank.csv", "\n\n");
    assert_refused(
        &ood(&blank, &ood_logits, NO_ARGS),
        &[&shown(&blank), "no rows"],
    );
    let header_only = dir.write("header.csv", "a,b,c\n");
    assert_refused(
        &ood(&id_logits, &header_only, NO_ARGS),
        &[&shown(&header_only), "no rows"],
    );
    let no_rows = dir.write("no-rows.npy", npy_bytes::<f32>(&[0, 3], false, &[]));
    assert_refused(
        &ood(&id_logits, &no_rows, NO_ARGS),
        &[&shown(&no_rows), "no rows"],
    );
}

#[test]
fn ood_ragged_rows_are_refused() {
    let dir = TempDir::new("ood-ragged");
    let (id_logits, ood_logits) = ood_files(&dir, "csv");
    let ragged = dir.write("ragged.csv", "1,2,3\n2,1\n0,5,1\n");
    assert_refused(
        &ood(&ragged, &ood_logits, NO_ARGS),
        &[&shown(&ragged), "line 2", "2 values, expected 3"],
    );
    let ragged_txt = dir.write("ragged.txt", "1 2 3\n2 1 0\n0 5 1 4\n");
    assert_refused(
        &ood(&id_logits, &ragged_txt, NO_ARGS),
        &[&shown(&ragged_txt), "line 3", "4 values, expected 3"],
    );
}

#[test]
fn ood_non_finite_logits_are_refused() {
    let dir = TempDir::new("ood-nonfinite");
    let (id_logits, ood_logits) = ood_files(&dir, "npy");
    let nan = dir.write("nan.csv", "1,2,3\n2,NaN,0\n");
    assert_refused(
        &ood(&nan, &ood_logits, NO_ARGS),
        &[&shown(&nan), "line 2, column 1", "not finite"],
    );
    let infinite = dir.write(
        "inf.npy",
        npy_logits(&[1.0_f64, 2.0, 3.0, f64::INFINITY, 1.0, 0.0], 3),
    );
    assert_refused(
        &ood(&id_logits, &infinite, NO_ARGS),
        &[&shown(&infinite), "row 1, column 0", "not finite"],
    );
}

#[test]
fn ood_files_with_different_class_counts_are_refused() {
    let dir = TempDir::new("ood-classes");
    let (id_logits, _) = ood_files(&dir, "csv");
    let two_classes = dir.write("two.npy", npy_logits(&[1.0_f32, 2.0, 2.0, 1.0], 2));
    assert_refused(
        &ood(&id_logits, &two_classes, NO_ARGS),
        &[
            &shown(&two_classes),
            "2 classes",
            &shown(&id_logits),
            "has 3",
        ],
    );
}

#[test]
fn ood_a_single_class_is_refused() {
    let dir = TempDir::new("ood-one-class");
    let (id_logits, ood_logits) = ood_files(&dir, "csv");
    let csv = dir.write("one.csv", "1\n2\n3\n");
    assert_refused(
        &ood(&csv, &ood_logits, NO_ARGS),
        &[&shown(&csv), "1 column(s)", "at least 2 classes"],
    );
    let npy = dir.write("one.npy", npy_logits(&[1.0_f32, 2.0, 3.0], 1));
    assert_refused(
        &ood(&id_logits, &npy, NO_ARGS),
        &[&shown(&npy), "1 column(s)", "at least 2 classes"],
    );
}

#[test]
fn ood_invalid_options_are_refused() {
    let dir = TempDir::new("ood-options");
    let (id_logits, ood_logits) = ood_files(&dir, "csv");
    for temperature in ["0", "-1", "NaN", "inf"] {
        assert_refused(
            &ood(&id_logits, &ood_logits, &["--temperature", temperature]),
            &["--temperature", "not a positive number"],
        );
    }
    // clap takes a separate "-inf" for a flag, not a negative number; attached, it is a value.
    assert_refused(
        &ood(&id_logits, &ood_logits, &["--temperature=-inf"]),
        &["--temperature", "not a positive number"],
    );
    assert_refused(
        &ood(&id_logits, &ood_logits, &["--temperature", "abc"]),
        &["--temperature", "invalid value"],
    );
    assert_refused(
        &calibra(&[
            OsStr::new("ood"),
            OsStr::new("--id-logits"),
            id_logits.as_os_str(),
        ]),
        &["--ood-logits"],
    );
}

/// A positive temperature so small that z/T overflows makes MSP NaN: refused, naming the option.
#[test]
fn ood_overflowing_temperature_is_refused() {
    let dir = TempDir::new("ood-overflow");
    let (_, ood_logits) = ood_files(&dir, "csv");
    let large = dir.write("large.csv", "1e9,0,0\n");
    assert_refused(
        &ood(&large, &ood_logits, &["--temperature", "1e-300"]),
        &["--temperature", "msp", "NaN"],
    );
}

/// Max-logit metrics of 4 ID and 4 OOD rows worked out by hand; the key set of the JSON.
#[test]
fn ood_max_logit_metrics_match_a_hand_computation() {
    let dir = TempDir::new("ood-hand");
    // Max-logits: ID 4, 3, 3, 1; OOD 3, 2, 1, 0.
    let id_logits = dir.write("id.csv", "4,0,-1\n1,3,0\n3,3,2\n-2,1,0.5\n");
    let ood_logits = write_logits(
        &dir,
        "ood.npy",
        &[0.0, 0.0, 3.0, 2.0, 1.0, 2.0, 1.0, 1.0, 1.0, 0.0, -1.0, -0.5],
        3,
    );
    let json = ood_json(&id_logits, &ood_logits, NO_ARGS);
    assert_eq!(
        keys(&json),
        ["energy", "max_logit", "msp", "n_id", "n_ood", "temperature"]
    );
    for score in ["msp", "max_logit", "energy"] {
        assert_eq!(
            keys(&json[score]),
            ["aupr_in", "aupr_out", "auroc", "fpr95"]
        );
    }
    assert_eq!(number(&json, "/temperature"), 1.0);
    assert_eq!(number(&json, "/n_id"), 4.0);
    assert_eq!(number(&json, "/n_ood"), 4.0);
    // Descending: 4 (ID), 3 (ID, ID, OOD), 2 (OOD), 1 (ID, OOD), 0 (OOD).
    // FPR95: ⌈0.95·4⌉ = 4, the threshold is the 4th largest ID score, 1; OOD ≥ 1: 3, 2, 1 → 3/4.
    // AUROC: ID 4 beats all 4; each ID 3 ties OOD 3 (½) and beats 2, 1, 0 (3), so 2·3.5; ID 1
    // ties OOD 1 (½) and beats 0 (1): (4 + 7 + 1.5)/16 = 25/32.
    // AUPR-In (ID positive), thresholds 4: P = 1, ΔR = ¼; 3: P = 3/4, ΔR = ½; 2: ΔR = 0;
    // 1: P = 4/7, ΔR = ¼; 0: ΔR = 0. AP = ¼ + ⅜ + 1/7 = 43/56.
    // AUPR-Out (OOD positive, scores negated, so ascending): 0: P = 1; 1: P = 2/3; 2: P = 3/4;
    // 3: P = 4/7; each ΔR = ¼. AP = ¼·(1 + 2/3 + 3/4 + 4/7) = ¼·251/84 = 251/336.
    for (metric, expected) in [
        ("fpr95", 0.75),
        ("auroc", 25.0 / 32.0),
        ("aupr_in", 43.0 / 56.0),
        ("aupr_out", 251.0 / 336.0),
    ] {
        let actual = number(&json, &format!("/max_logit/{metric}"));
        assert!(
            (actual - expected).abs() <= HAND_TOLERANCE,
            "max_logit {metric}: {actual} vs {expected}"
        );
    }
    // The temperature changes MSP and energy, never the max-logit.
    let hot = ood_json(&id_logits, &ood_logits, &["--temperature", "3"]);
    assert_eq!(number(&hot, "/temperature"), 3.0);
    assert_eq!(hot["max_logit"], json["max_logit"]);
}

/// `calibra ood --json` on the fixtures of `scripts/ood-reference.py` equals scikit-learn's
/// metrics at every temperature there.
#[test]
fn ood_metrics_match_scikit_learn() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ood");
    let text = std::fs::read_to_string(fixtures.join("expected.json")).expect("expected.json");
    let expected: Value = serde_json::from_str(&text).expect("expected.json is JSON");
    let cases = expected["cases"].as_array().expect("a list of cases");
    assert!(!cases.is_empty());
    for case in cases {
        let temperature = number(case, "/temperature").to_string();
        let actual = ood_json(
            &fixtures.join("id-logits.npy"),
            &fixtures.join("ood-logits.npy"),
            &["--temperature", &temperature],
        );
        assert_eq!(keys(&actual), keys(case));
        assert_json_close(
            &actual,
            case,
            SCIKIT_LEARN_TOLERANCE,
            &format!("T = {temperature}"),
        );
    }
}

/// The committed OOD fixtures' paths and their logits: in-distribution, then OOD.
fn ood_fixtures() -> (PathBuf, PathBuf, LogitsTable, LogitsTable) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ood");
    let (id_path, ood_path) = (
        fixtures.join("id-logits.npy"),
        fixtures.join("ood-logits.npy"),
    );
    let id_table = calibra::input::read_logits(&id_path).unwrap();
    let ood_table = calibra::input::read_logits(&ood_path).unwrap();
    (id_path, ood_path, id_table, ood_table)
}

/// `calibra ood --pvalues` equals the library's outlier test on the same halves: the
/// in-distribution rows split as `seeded_split(n, 0.5, seed)`, every score at the temperature.
#[test]
fn ood_pvalues_equal_the_librarys_outlier_test_on_the_same_halves() {
    use calibra::ood;
    use calibra::ood_pvalues;
    const SEED: u64 = 3;
    const LEVEL: f64 = 0.2;
    let (id_path, ood_path, id_table, ood_table) = ood_fixtures();
    let json = ood_json(
        &id_path,
        &ood_path,
        &[
            "--temperature",
            "2",
            "--pvalues",
            "--fdr",
            &LEVEL.to_string(),
            "--seed",
            &SEED.to_string(),
        ],
    );
    let id_view = Logits::new(&id_table.values, id_table.num_classes).unwrap();
    let ood_view = Logits::new(&ood_table.values, ood_table.num_classes).unwrap();
    let (calibration_rows, tested_rows) = seeded_split(id_view.len(), 0.5, SEED);
    type ScoreOf = fn(&Logits) -> Vec<f64>;
    let scores: [(&str, ScoreOf); 3] = [
        ("msp", |l| ood::max_softmax_probability(l, 2.0).unwrap()),
        ("max_logit", ood::max_logit),
        ("energy", |l| ood::energy_score(l, 2.0).unwrap()),
    ];
    assert_eq!(json["pvalues"]["seed"], SEED);
    for (name, score) in scores {
        let id_scores = score(&id_view);
        let pick = |rows: &[usize]| rows.iter().map(|&i| id_scores[i]).collect::<Vec<f64>>();
        let expected = ood_pvalues::outlier_test(
            &pick(&calibration_rows),
            &pick(&tested_rows),
            &score(&ood_view),
            LEVEL,
        )
        .unwrap();
        assert_json_close(
            &json["pvalues"][name],
            &serde_json::to_value(&expected).unwrap(),
            LIBRARY_TOLERANCE,
            name,
        );
    }
    assert!(number(&json, "/pvalues/energy/discoveries") > 0.0);
    assert!(json.get("difference").is_none());
    let table = ood(&id_path, &ood_path, &["--pvalues"]);
    assert_success(&table);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("conformal p-values against 100 in-distribution rows (seed 0)")
            && text.contains("Benjamini-Hochberg at false discovery rate 0.1"),
        "{text}"
    );
}

/// `calibra ood --pvalues --ood-share S` tests the OOD rows `mixed_rows` draws with the seed,
/// as the LogitNorm lab's share slider mixes them.
#[test]
fn ood_pvalues_at_a_share_test_the_mixed_rows() {
    use calibra::ood;
    use calibra::ood_pvalues;
    const SEED: u64 = 5;
    const SHARE: f64 = 0.25;
    let (id_path, ood_path, id_table, ood_table) = ood_fixtures();
    let share = SHARE.to_string();
    let arguments = [
        "--pvalues",
        "--ood-share",
        &share,
        "--seed",
        &SEED.to_string(),
    ];
    let json = ood_json(&id_path, &ood_path, &arguments);
    let id_scores = ood::max_logit(&Logits::new(&id_table.values, id_table.num_classes).unwrap());
    let ood_scores =
        ood::max_logit(&Logits::new(&ood_table.values, ood_table.num_classes).unwrap());
    let (calibration_rows, tested_rows) = seeded_split(id_scores.len(), 0.5, SEED);
    let rows = ood_pvalues::mixed_rows(ood_scores.len(), tested_rows.len(), SHARE, SEED).unwrap();
    let pick = |scores: &[f64], rows: &[usize]| rows.iter().map(|&i| scores[i]).collect::<Vec<_>>();
    let expected = ood_pvalues::outlier_test(
        &pick(&id_scores, &calibration_rows),
        &pick(&id_scores, &tested_rows),
        &pick(&ood_scores, &rows),
        0.1,
    )
    .unwrap();
    assert_eq!(json["pvalues"]["ood_share"], SHARE);
    assert_json_close(
        &json["pvalues"]["max_logit"],
        &serde_json::to_value(&expected).unwrap(),
        LIBRARY_TOLERANCE,
        "max_logit",
    );
    assert!(expected.n_out_of_distribution < ood_scores.len());
}

#[test]
fn ood_bad_fdr_levels_and_too_few_rows_for_pvalues_are_refused() {
    let dir = TempDir::new("ood-pvalues");
    let (id_logits, ood_logits) = ood_files(&dir, "csv");
    for level in ["0", "1", "-0.1", "NaN"] {
        assert_refused(
            &ood(&id_logits, &ood_logits, &["--pvalues", "--fdr", level]),
            &["--fdr", "between 0 and 1"],
        );
    }
    assert_refused(
        &ood(&id_logits, &ood_logits, &["--fdr", "0.1"]),
        &["--pvalues"],
    );
    for share in ["0", "1", "-0.1"] {
        assert_refused(
            &ood(
                &id_logits,
                &ood_logits,
                &["--pvalues", "--ood-share", share],
            ),
            &["--ood-share", "between 0 and 1"],
        );
    }
    let single = dir.write("single.csv", "1,0,0\n");
    assert_refused(
        &ood(&single, &ood_logits, &["--pvalues"]),
        &[&shown(&single), "at least 2 in-distribution rows"],
    );
}

#[test]
fn ood_table_output_names_every_score() {
    let dir = TempDir::new("ood-table");
    let (id_logits, ood_logits) = ood_files(&dir, "csv");
    let output = ood(&id_logits, &ood_logits, NO_ARGS);
    assert_success(&output);
    let stdout = String::from_utf8(output.stdout).unwrap();
    for score in ["msp ", "max_logit ", "energy "] {
        assert!(stdout.lines().any(|l| l.starts_with(score)), "{stdout}");
    }
    assert!(stdout.contains("temperature T = 1.0000"), "{stdout}");
    assert!(
        serde_json::from_str::<Value>(&stdout).is_err(),
        "a table, not JSON"
    );
}

// ---------------------------------------------------------------------------------------------
// `calibra logits` on a picture

#[test]
fn a_png_picture_gives_the_logits_of_the_28x28_the_page_makes_of_it() {
    use calibra::own_image::{self, Invert};
    let dir = TempDir::new("png");
    let model = Path::new("assets/models/fmnist-ce.safetensors");
    // Test image 0 as ink on paper, blown up four times on a wider sheet.
    let images =
        calibra::data::load_images(Path::new("assets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
            .unwrap();
    let side = 28 * 4 + 20;
    let mut picture = image::RgbaImage::from_pixel(side, side, image::Rgba([255, 255, 255, 255]));
    for y in 0..28 * 4 {
        for x in 0..28 * 4 {
            let ink = 255 - images.image(0)[(y as usize / 4) * 28 + x as usize / 4];
            picture.put_pixel(x + 10, y + 10, image::Rgba([ink, ink, ink, 255]));
        }
    }
    let png = dir.path("picture.png");
    picture.save(&png).unwrap();
    let prepared =
        own_image::prepare(picture.as_raw(), side as usize, side as usize, Invert::Auto).unwrap();
    let idx = dir.write(
        "picture-idx3-ubyte",
        calibra::data::idx_images_file(&prepared.pixels),
    );
    let logits_of = |images: &Path, out: &str, extra: &[&str]| {
        let out = dir.path(out);
        (run_on_images("logits", model, images, &out, extra), out)
    };
    let (output, from_png) = logits_of(&png, "png.npy", &[]);
    assert_success(&output);
    let (output, from_idx) = logits_of(&idx, "idx.npy", &[]);
    assert_success(&output);
    let png_logits = calibra::input::read_logits(&from_png).unwrap();
    assert_eq!(png_logits.values.len(), 10);
    assert_eq!(png_logits, calibra::input::read_logits(&from_idx).unwrap());
    // Negating it (auto guesses so: the border is white) is what makes it readable: left as it
    // is, the white sheet is both the background and the brightest shade.
    let (output, _) = logits_of(&png, "off.npy", &["--invert", "off"]);
    assert_refused(&output, &["picture.png", "blank"]);
    let broken = dir.write("broken.png", &std::fs::read(&png).unwrap()[..40]);
    let (output, _) = logits_of(&broken, "broken.npy", &[]);
    assert_refused(&output, &["broken.png", "not a PNG this tool can decode"]);
}

// ---------------------------------------------------------------------------------------------
// `calibra logits` on corrupted images

/// The pixels of the first `count` Fashion-MNIST test images, and an IDX file of them in `dir`.
fn first_test_images(dir: &TempDir, count: usize) -> (Vec<u8>, PathBuf) {
    let images =
        calibra::data::load_images(Path::new("assets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
            .unwrap();
    let first = images.pixels()[..count * 784].to_vec();
    let idx = dir.write("first-idx3-ubyte", calibra::data::idx_images_file(&first));
    (first, idx)
}

/// `calibra COMMAND --model MODEL --images IMAGES --out OUT EXTRA…` (`logits`, `features`).
fn run_on_images(command: &str, model: &Path, images: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        OsStr::new(command),
        OsStr::new("--model"),
        model.as_os_str(),
        OsStr::new("--images"),
        images.as_os_str(),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    calibra(&args)
}

#[test]
fn corrupted_images_give_the_logits_of_the_shift_labs_copy_and_bad_severities_are_refused() {
    use calibra::lab::ShiftedSet;
    use calibra::shift::Corruption;
    let dir = TempDir::new("shift");
    let model = Path::new("assets/models/fmnist-ce.safetensors");
    let (first, idx) = first_test_images(&dir, 40);
    let first = &first[..];
    let logits = |extra: &[&str], out: &str| {
        let out = dir.path(out);
        (run_on_images("logits", model, &idx, &out, extra), out)
    };
    // The CLI's corrupted images are the page's: their logits equal those of the copy made by
    // the library and written as IDX.
    let corrupted = ShiftedSet::new(Corruption::Noise, 3)
        .unwrap()
        .pixels(first)
        .unwrap();
    assert_ne!(corrupted, first);
    let corrupted_idx = dir.write(
        "noise-idx3-ubyte",
        calibra::data::idx_images_file(&corrupted),
    );
    let (output, from_cli) = logits(&["--corruption", "noise", "--severity", "3"], "cli.npy");
    assert_success(&output);
    let expected = dir.path("expected.npy");
    assert_success(&run_on_images(
        "logits",
        model,
        &corrupted_idx,
        &expected,
        &[],
    ));
    assert_eq!(
        calibra::input::read_logits(&from_cli).unwrap(),
        calibra::input::read_logits(&expected).unwrap()
    );
    let (output, _) = logits(&["--corruption", "inversion", "--severity", "2"], "bad.npy");
    assert_refused(
        &output,
        &["--severity", "Inversion has severities 0 to 1, not 2"],
    );
    let (output, _) = logits(&["--corruption", "rotation", "--severity", "0"], "zero.npy");
    assert_refused(
        &output,
        &["--severity", "Rotation has severities 0 to 5, not 0"],
    );
    let (output, _) = logits(&["--corruption", "tilt", "--severity", "1"], "tilt.npy");
    assert_refused(&output, &["--corruption", "tilt"]);
    let (output, _) = logits(&["--corruption", "blur"], "alone.npy");
    assert_refused(&output, &["--severity"]);
}

/// With a reference network's logits on the same images, `ood` adds the paired bootstrap of the
/// difference: each estimate is the difference of the two networks' own metrics, and each
/// interval the library's (`ood_difference`, the τ lab's settings) on the same scores. A
/// reference for other images is refused with its path.
#[test]
fn ood_with_a_reference_gives_the_paired_difference_of_the_two_networks() {
    let dir = TempDir::new("ood-reference");
    let (id_logits, ood_logits) = ood_files(&dir, "npy");
    let shift = |values: &[f32]| -> Vec<f32> {
        values
            .iter()
            .enumerate()
            .map(|(i, &z)| if i % 3 == 0 { z + 0.5 } else { z })
            .collect()
    };
    let (id_data, ood_data) = (small_data(12).logits, small_data(9).logits);
    let reference_id = write_logits(&dir, "reference-id.npy", &shift(&id_data), 3);
    let reference_ood = write_logits(&dir, "reference-ood.npy", &shift(&ood_data), 3);
    let with = ood_json(
        &id_logits,
        &ood_logits,
        &[
            OsStr::new("--reference-id-logits"),
            reference_id.as_os_str(),
            OsStr::new("--reference-ood-logits"),
            reference_ood.as_os_str(),
        ],
    );
    let own = ood_json(&id_logits, &ood_logits, NO_ARGS);
    let reference = ood_json(&reference_id, &reference_ood, NO_ARGS);
    assert!(
        own.get("difference").is_none(),
        "no reference, no difference"
    );
    let energy =
        |values: &[f32]| calibra::ood::energy_score(&Logits::new(values, 3).unwrap(), 1.0).unwrap();
    let expected = calibra::ood_difference::paired_difference(
        (&energy(&id_data), &energy(&ood_data)),
        (&energy(&shift(&id_data)), &energy(&shift(&ood_data))),
        &calibra::lab::DIFFERENCE_BOOTSTRAP,
    )
    .unwrap();
    for metric in ["fpr95", "auroc"] {
        let shown = &with["difference"]["energy"][metric];
        let own_minus_reference =
            own["energy"][metric].as_f64().unwrap() - reference["energy"][metric].as_f64().unwrap();
        assert_eq!(
            shown["estimate"].as_f64().unwrap(),
            own_minus_reference,
            "{metric}"
        );
        let interval = if metric == "fpr95" {
            expected.fpr95
        } else {
            expected.auroc
        };
        assert_eq!(shown["lower"].as_f64().unwrap(), interval.lower, "{metric}");
        assert_eq!(shown["upper"].as_f64().unwrap(), interval.upper, "{metric}");
    }
    let other_images = write_logits(&dir, "other.npy", &small_data(5).logits, 3);
    let output = ood(
        &id_logits,
        &ood_logits,
        &[
            OsStr::new("--reference-id-logits"),
            other_images.as_os_str(),
            OsStr::new("--reference-ood-logits"),
            reference_ood.as_os_str(),
        ],
    );
    assert_refused(
        &output,
        &[&shown(&other_images), "not the 12 rows of 3 classes"],
    );
}

// ---------------------------------------------------------------------------------------------
// `calibra features`

/// `calibra features` writes the library's penultimate features `[n, 128]`, and they are what
/// the last layer reads: its weights applied to them give `calibra logits`' logits (1e-4, the
/// float32 sums' rounding on logits of a few tens). A file that is not IDX images is refused by
/// name.
#[test]
fn features_are_the_last_layers_input_on_the_same_images() {
    let dir = TempDir::new("features");
    let model = Path::new("assets/models/fmnist-ce.safetensors");
    let (first, idx) = first_test_images(&dir, 40);
    let first = &first[..];
    let run = |command: &str, images: &Path, out: &str| {
        let out = dir.path(out);
        (run_on_images(command, model, images, &out, &[]), out)
    };
    let (output, features_path) = run("features", &idx, "features.npy");
    assert_success(&output);
    let (output, logits_path) = run("logits", &idx, "logits.npy");
    assert_success(&output);
    let features = calibra::input::read_logits(&features_path).unwrap();
    assert_eq!((features.rows(), features.num_classes), (40, 128));
    let classifier =
        calibra::model::Classifier::from_safetensors(std::fs::read(model).unwrap()).unwrap();
    assert_eq!(
        features.values,
        classifier.features_and_logits(first).unwrap().0
    );
    let logits = calibra::input::read_logits(&logits_path).unwrap();
    let (weight, bias) = classifier.last_layer().unwrap();
    for (h, z) in features
        .values
        .chunks_exact(128)
        .zip(logits.values.chunks_exact(10))
    {
        for ((w, b), z) in weight.chunks_exact(128).zip(&bias).zip(z) {
            let recomputed = w.iter().zip(h).map(|(w, h)| w * h).sum::<f32>() + b;
            assert!((recomputed - z).abs() <= 1e-4, "{recomputed} vs {z}");
        }
    }
    let not_images = dir.write("not-images", "no pixels here");
    let (output, _) = run("features", &not_images, "bad.npy");
    assert_refused(&output, &["not-images"]);
}

// ---------------------------------------------------------------------------------------------
// `calibra ood --model`: every logit and feature score from a network and images

/// The nine scores of `calibra ood --model`, as its JSON names them.
const MODEL_SCORES: [&str; 9] = [
    "msp",
    "max_logit",
    "energy",
    "mahalanobis",
    "knn",
    "react",
    "ash",
    "vim",
    "gradnorm",
];

/// `calibra ood --model` fits the feature detectors on 300 test images with their labels and
/// compares every score on 200 other test images against 200 MNIST digits: each of the nine
/// scores' four metrics and their bootstrap intervals equal the library's on the same
/// network's features and logits, and
/// labels that do not match the fitting images, or a missing image set, are refused by name.
#[test]
fn ood_with_a_model_gives_every_logit_and_feature_score() {
    use calibra::ood_features::{Features, FittedDetectors, LastLayer};
    let dir = TempDir::new("ood-model");
    let model = Path::new("assets/models/fmnist-logitnorm.safetensors");
    let (pixels, _) = first_test_images(&dir, 500);
    let labels =
        calibra::data::load_labels(Path::new("assets/fashion-mnist/t10k-labels-idx1-ubyte.gz"))
            .unwrap();
    let digits = calibra::data::load_images(Path::new("assets/mnist-ood-images-idx3-ubyte.gz"))
        .unwrap()
        .pixels()[..200 * 784]
        .to_vec();
    let (fit, scored) = pixels.split_at(300 * 784);
    let fit_images = dir.write("fit-idx3-ubyte", calibra::data::idx_images_file(fit));
    let id_images = dir.write("id-idx3-ubyte", calibra::data::idx_images_file(scored));
    let ood_images = dir.write("ood-idx3-ubyte", calibra::data::idx_images_file(&digits));
    let label_lines: String = labels[..300].iter().map(|l| format!("{l}\n")).collect();
    let fit_labels = dir.write("fit-labels.txt", &label_lines);
    let run = |labels: &Path, extra: &[&str]| {
        let mut args = vec![
            OsStr::new("ood"),
            OsStr::new("--model"),
            model.as_os_str(),
            OsStr::new("--fit-images"),
            fit_images.as_os_str(),
            OsStr::new("--fit-labels"),
            labels.as_os_str(),
            OsStr::new("--id-images"),
            id_images.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        calibra(&args)
    };
    let output = run(
        &fit_labels,
        &["--ood-images", ood_images.to_str().unwrap(), "--json"],
    );
    assert_success(&output);
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();

    let classifier =
        calibra::model::Classifier::from_safetensors(std::fs::read(model).unwrap()).unwrap();
    let (weight, bias) = classifier.last_layer().unwrap();
    let activations =
        [fit, scored, &digits[..]].map(|p| classifier.features_and_logits(p).unwrap());
    let features = |i: usize| Features::new(&activations[i].0, 128).unwrap();
    let fit_labels_u32: Vec<u32> = labels[..300].iter().map(|&l| u32::from(l)).collect();
    let detectors = FittedDetectors::fit(
        &features(0),
        &fit_labels_u32,
        LastLayer::new(&weight, &bias, 128).unwrap(),
    )
    .unwrap();
    let [id_scores, ood_scores] = [1, 2].map(|i| detectors.scores(&features(i)).unwrap());
    let logits = |i: usize| Logits::new(&activations[i].1, 10).unwrap();
    let logit_scores = |i: usize| {
        vec![
            calibra::ood::max_softmax_probability(&logits(i), 1.0).unwrap(),
            calibra::ood::max_logit(&logits(i)),
            calibra::ood::energy_score(&logits(i), 1.0).unwrap(),
        ]
    };
    let all = |logit: Vec<Vec<f64>>, f: &calibra::ood_features::FeatureScores| {
        let mut all = logit;
        all.extend(
            [
                &f.mahalanobis,
                &f.knn,
                &f.react,
                &f.ash,
                &f.vim,
                &f.gradnorm,
            ]
            .map(Clone::clone),
        );
        all
    };
    let (id_all, ood_all) = (
        all(logit_scores(1), &id_scores),
        all(logit_scores(2), &ood_scores),
    );
    assert_eq!(json["n_fit"], 300);
    assert_eq!(json["knn_k"], 1);
    assert_eq!(json["vim_dimension"], 64);
    for ((name, id), ood) in MODEL_SCORES.iter().zip(&id_all).zip(&ood_all) {
        let expected = calibra::ood_difference::detection_intervals(
            id,
            ood,
            &calibra::lab::DIFFERENCE_BOOTSTRAP,
        )
        .unwrap();
        let exact = calibra::ood::detection_metrics(id, ood).unwrap();
        for (key, interval, value) in [
            ("fpr95", expected.fpr95, exact.fpr95),
            ("auroc", expected.auroc, exact.auroc),
            ("aupr_in", expected.aupr_in, exact.aupr_in),
            ("aupr_out", expected.aupr_out, exact.aupr_out),
        ] {
            for (suffix, expected) in [
                ("", value),
                ("_lo", interval.lower),
                ("_hi", interval.upper),
            ] {
                let found = number(&json, &format!("/{name}/{key}{suffix}"));
                assert!(
                    (found - expected).abs() <= LIBRARY_TOLERANCE,
                    "{name}.{key}{suffix}"
                );
            }
        }
    }

    let short_labels = dir.write("short-labels.txt", "0\n1\n");
    let output = run(
        &short_labels,
        &["--ood-images", ood_images.to_str().unwrap()],
    );
    assert_refused(
        &output,
        &["short-labels.txt", "2 labels for 300 feature rows"],
    );
    let output = run(&fit_labels, &[]);
    assert_refused(&output, &["--ood-images"]);
}

/// `report --json`'s Brier decomposition on planted rows (stored logits 2.5 times calibrated
/// ones): in `before` and `after` the terms add up to the Brier score, uncertainty is the
/// labels' own `Σ_k ō_k(1 − ō_k)` at both temperatures, and the fitted T takes most of the
/// reliability term away while resolution moves by less than half as much.
#[test]
fn report_decomposes_the_brier_score() {
    let data = synthetic_data(4000, 4, TRUE_TEMPERATURE, 11);
    let (json, _) = report_on_own_rows(&data, "brier-decomposition", "npy", &[]);
    let base_rates: Vec<f64> = (0..data.k as u32)
        .map(|k| data.labels.iter().filter(|&&y| y == k).count() as f64 / data.len() as f64)
        .collect();
    let uncertainty: f64 = base_rates.iter().map(|o| o * (1.0 - o)).sum();
    let term =
        |part: &str, name: &str| number(&json, &format!("/{part}/brier_decomposition/{name}"));
    for part in ["before", "after"] {
        let sum = term(part, "reliability") - term(part, "resolution")
            + term(part, "uncertainty")
            + term(part, "within_bin");
        assert!((sum - number(&json, &format!("/{part}/brier"))).abs() <= HAND_TOLERANCE);
        assert!((term(part, "uncertainty") - uncertainty).abs() <= HAND_TOLERANCE);
    }
    let reliability_drop = term("before", "reliability") - term("after", "reliability");
    assert!(term("after", "reliability") < 0.3 * term("before", "reliability"));
    let resolution_move = (term("after", "resolution") - term("before", "resolution")).abs();
    assert!(
        resolution_move < 0.5 * reliability_drop,
        "{}",
        json["after"]
    );
}

#[test]
fn an_incomplete_model_run_of_ood_is_told_what_it_lacks() {
    // --fit-images alone: the network is missing, and nothing of the logits-file way is asked for.
    let output = calibra(&["ood", "--fit-images", "fit.idx"]);
    assert_refused(&output, &["--model"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("--id-logits"), "{stderr}");
    // --model alone: the four image options it needs.
    let output = calibra(&["ood", "--model", "m.safetensors"]);
    assert_refused(
        &output,
        &[
            "--fit-images",
            "--fit-labels",
            "--id-images",
            "--ood-images",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("--id-logits"), "{stderr}");
    // Nothing at all: the logits files.
    assert_refused(&calibra(&["ood"]), &["--id-logits", "--ood-logits"]);
}

/// `report --json`'s CORP decompositions of the top-label event on planted rows (stored logits
/// 2.5 times calibrated ones): in `before` and `after` each score is MCB − DSC + UNC, the
/// uncertainty is that of the accuracy itself (`a(1 − a)` and `−a ln a − (1 − a) ln(1 − a)`),
/// and the fitted T takes most of the miscalibration away.
#[test]
fn report_gives_the_corp_decompositions() {
    let data = synthetic_data(4000, 4, TRUE_TEMPERATURE, 11);
    let (json, _) = report_on_own_rows(&data, "corp-decomposition", "npy", &[]);
    let at = |part: &str, name: &str| number(&json, &format!("/{part}/{name}"));
    for part in ["before", "after"] {
        for score in ["brier", "log"] {
            let term = |name: &str| at(part, &format!("corp_{score}_{name}"));
            let sum = term("mcb") - term("dsc") + term("unc");
            assert!(
                (sum - term("score")).abs() <= HAND_TOLERANCE,
                "{part} {score}"
            );
            assert!(term("mcb") >= 0.0 && term("dsc") >= 0.0, "{part} {score}");
        }
        let accuracy = at(part, "accuracy");
        let entropy = -accuracy * accuracy.ln() - (1.0 - accuracy) * (1.0 - accuracy).ln();
        assert!((at(part, "corp_brier_unc") - accuracy * (1.0 - accuracy)).abs() <= HAND_TOLERANCE);
        assert!((at(part, "corp_log_unc") - entropy).abs() <= HAND_TOLERANCE);
    }
    for score in ["brier", "log"] {
        let mcb = |part: &str| at(part, &format!("corp_{score}_mcb"));
        assert!(mcb("after") < 0.3 * mcb("before"), "{}", json["after"]);
    }
}
