//! The reader's own logits: a logits file, its labels and, optionally, the names of the
//! classes, read by the parsers the command-line tool uses ([`crate::input`]) in the page's
//! inference worker ([`read`]), become on the page a [`Lab`] of one network ([`lab`]) that the temperature and conformal labs show as they show the
//! bundled one, with the same split, fit, charts and readouts ([`super::LabData::Own`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::input::{self, Format, InputError};
use crate::lab::{Lab, LabError};

use crate::text::grouped;

/// Why the reader's files were refused; every message names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum OwnLogitsError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{path}: {error}")]
    Lab { path: String, error: LabError },
}

/// One file the reader gave: its name (which tells its format, as on the command line) and
/// its bytes.
#[derive(Debug, Clone, Copy)]
pub struct OwnFile<'a> {
    pub name: &'a str,
    pub bytes: &'a [u8],
}

/// The reader's files, read and checked by [`read`]. The page's inference worker reads them,
/// so that the page's thread never parses and the page's module carries no parser of `.npy`
/// and text files; the page makes the lab ([`lab`]) from what the worker sends.
#[derive(Debug)]
pub struct OwnTable {
    /// Logits `[n, K]`, row-major.
    pub logits: Vec<f32>,
    pub labels: Vec<u32>,
    pub about: OwnAbout,
}

/// What the reader's files are, besides their numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnAbout {
    pub classes: usize,
    pub class_names: Vec<String>,
    /// The logits file's name, which a refusal by the lab names.
    pub logits_name: String,
    /// The sentence that says what the labs show.
    pub description: String,
}

/// Reads `logits` (`.npy` `[n, K]` f32 or f64, or `.csv`/`.txt`), `labels` (`.npy` integers,
/// text, or IDX) and the optional class `names` (one a line), and checks them as the
/// command-line tool does.
///
/// # Errors
/// The first problem found, in the command-line tool's words: a file's format, a line or row
/// at fault, labels that do not match the logits, logits that look like probabilities, or a
/// names file with another number of lines than classes.
pub fn read(
    logits: OwnFile,
    labels: OwnFile,
    names: Option<OwnFile>,
) -> Result<OwnTable, OwnLogitsError> {
    let (logits_path, labels_path) = (Path::new(logits.name), Path::new(labels.name));
    let table = input::parse_logits(logits.bytes, Format::of(logits_path)?, logits_path)?;
    let label_values = input::parse_labels(labels.bytes, Format::of(labels_path)?, labels_path)?;
    input::check_labels(&table, logits_path, &label_values, labels_path)?;
    input::check_not_probabilities(&table, logits_path)?;
    let k = table.num_classes;
    let class_names = match names {
        Some(file) => input::parse_class_names(file.bytes, Path::new(file.name), k)?,
        None => (0..k).map(|class| format!("class {class}")).collect(),
    };
    let names_part = names.map_or_else(String::new, |file| {
        format!(", the classes named in {}", file.name)
    });
    let description = format!(
        "{} rows of {k} classes: logits from {}, labels from {}{names_part}",
        grouped(table.rows()),
        logits.name,
        labels.name
    );
    Ok(OwnTable {
        logits: table.values,
        labels: label_values,
        about: OwnAbout {
            classes: k,
            class_names,
            logits_name: logits.name.to_string(),
            description,
        },
    })
}

/// The lab of one network on the reader's `table`.
///
/// # Errors
/// Fewer than two rows or classes, or logits and labels of different lengths, named by the
/// logits file.
pub fn lab(table: OwnTable) -> Result<Lab, OwnLogitsError> {
    let OwnTable {
        logits,
        labels,
        about,
    } = table;
    let lab_error = |error| OwnLogitsError::Lab {
        path: about.logits_name.clone(),
        error,
    };
    let mut lab = Lab::new(labels, about.classes, 1)
        .and_then(|lab| lab.with_class_names(about.class_names))
        .map_err(lab_error)?;
    lab.add_logits(0, 0, &logits).map_err(lab_error)?;
    Ok(lab)
}

#[cfg(test)]
#[path = "own_logits_tests.rs"]
mod tests;
