//! The reader's own logits: a logits file, its labels and, optionally, the names of the
//! classes, read by the parsers the command-line tool uses ([`crate::input`]), become a
//! [`Lab`] of one network that the temperature and conformal labs show as they show the
//! bundled one, with the same split, fit, charts and readouts ([`super::LabData::Own`]).

use std::path::Path;

use crate::input::{self, Format, InputError};
use crate::lab::{Lab, LabError};

use super::grouped;

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

/// The reader's data as the labs hold it, and the sentence that says what it is.
#[derive(Debug)]
pub struct OwnLogits {
    pub lab: Lab,
    pub description: String,
}

/// Reads `logits` (`.npy` `[n, K]` f32 or f64, or `.csv`/`.txt`), `labels` (`.npy` integers,
/// text, or IDX) and the optional class `names` (one a line) into a lab.
///
/// # Errors
/// The first problem found, in the command-line tool's words: a file's format, a line or row
/// at fault, labels that do not match the logits, logits that look like probabilities, a
/// names file with another number of lines than classes, or fewer than two rows.
pub fn load(
    logits: OwnFile,
    labels: OwnFile,
    names: Option<OwnFile>,
) -> Result<OwnLogits, OwnLogitsError> {
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
    let rows = table.rows();
    let lab_error = |error| OwnLogitsError::Lab {
        path: logits.name.to_string(),
        error,
    };
    let mut lab = Lab::new(label_values, k, 1)
        .and_then(|lab| lab.with_class_names(class_names))
        .map_err(lab_error)?;
    lab.add_logits(0, 0, &table.values).map_err(lab_error)?;
    let names_part = names.map_or_else(String::new, |file| {
        format!(", the classes named in {}", file.name)
    });
    Ok(OwnLogits {
        lab,
        description: format!(
            "{} rows of {k} classes: logits from {}, labels from {}{names_part}",
            grouped(rows),
            logits.name,
            labels.name
        ),
    })
}

#[cfg(test)]
#[path = "own_logits_tests.rs"]
mod tests;
