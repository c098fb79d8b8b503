//! Reading logits and labels from `.npy` or text files, with messages that name the file and,
//! for text, the line.
//!
//! Logits: `.npy` of f32 or f64 with shape `[n, K]`, or text with one row of K numbers a line
//! (comma- or whitespace-separated, as NumPy's `savetxt` writes), an optional header row and
//! blank lines ignored. Labels: `.npy` of any integer dtype with shape `[n]`, or one integer a
//! line.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use npyz::{DType, NpyFile, Order, TypeChar};

/// A bad input file; every message starts with the file's path.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: unknown file type (use .npy, .csv or .txt; labels may also be IDX: .gz, .idx, -ubyte)")]
    UnknownExtension { path: PathBuf },
    #[error("{path}: {detail}")]
    Npy { path: PathBuf, detail: String },
    #[error("{path}: line {line}: {detail}")]
    Text {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("{path}: {location}: value {value} is not finite (NaN or infinite logits cannot be calibrated)")]
    NonFinite {
        path: PathBuf,
        location: String,
        value: f64,
    },
    #[error("{path}: no rows")]
    Empty { path: PathBuf },
    #[error("{path}: {num_classes} column(s): logits need at least 2 classes")]
    TooFewClasses { path: PathBuf, num_classes: usize },
}

/// Row-major `[n, K]` logits.
#[derive(Debug, Clone, PartialEq)]
pub struct LogitsTable {
    pub values: Vec<f32>,
    pub num_classes: usize,
}

impl LogitsTable {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.values.len() / self.num_classes
    }

    /// The rows at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> LogitsTable {
        let k = self.num_classes;
        let mut values = Vec::with_capacity(indices.len() * k);
        for &i in indices {
            values.extend_from_slice(&self.values[i * k..(i + 1) * k]);
        }
        LogitsTable {
            values,
            num_classes: k,
        }
    }
}

enum Format {
    Npy,
    Text,
    /// IDX unsigned bytes (gzipped or not), as MNIST-style label files ship.
    Idx,
}

fn format_of(path: &Path) -> Result<Format, InputError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("npy") => Ok(Format::Npy),
        Some(e) if e.eq_ignore_ascii_case("csv") || e.eq_ignore_ascii_case("txt") => {
            Ok(Format::Text)
        }
        Some(e) if e.eq_ignore_ascii_case("gz") || e.eq_ignore_ascii_case("idx") => Ok(Format::Idx),
        _ if path.to_string_lossy().ends_with("-ubyte") => Ok(Format::Idx),
        _ => Err(InputError::UnknownExtension {
            path: path.to_path_buf(),
        }),
    }
}

/// Reads a logits file.
///
/// # Errors
/// Unreadable or malformed file, a ragged or non-numeric row (with its line), a non-finite
/// value (with its row and column), no rows, or fewer than two columns.
pub fn read_logits(path: &Path) -> Result<LogitsTable, InputError> {
    let table = match format_of(path)? {
        Format::Npy => read_npy_logits(path)?,
        Format::Text => read_text_logits(path)?,
        Format::Idx => {
            return Err(InputError::Npy {
                path: path.to_path_buf(),
                detail: "IDX files hold unsigned bytes (images or labels), not logits".to_string(),
            })
        }
    };
    if table.values.is_empty() {
        return Err(InputError::Empty {
            path: path.to_path_buf(),
        });
    }
    if table.num_classes < 2 {
        return Err(InputError::TooFewClasses {
            path: path.to_path_buf(),
            num_classes: table.num_classes,
        });
    }
    Ok(table)
}

/// Reads a labels file; range checks against the number of classes are the caller's.
///
/// # Errors
/// Unreadable or malformed file, a non-integer or negative label (with its line or index), or
/// no rows.
pub fn read_labels(path: &Path) -> Result<Vec<u32>, InputError> {
    let labels = match format_of(path)? {
        Format::Npy => read_npy_labels(path)?,
        Format::Text => read_text_labels(path)?,
        Format::Idx => calibra::data::load_labels(path)
            .map_err(|e| InputError::Npy {
                path: path.to_path_buf(),
                detail: e.to_string(),
            })?
            .into_iter()
            .map(u32::from)
            .collect(),
    };
    if labels.is_empty() {
        return Err(InputError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(labels)
}

fn open_npy(path: &Path) -> Result<NpyFile<BufReader<File>>, InputError> {
    let file = File::open(path).map_err(|error| InputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    NpyFile::new(BufReader::new(file)).map_err(|e| npy_error(path, format!("not a .npy file: {e}")))
}

fn npy_error(path: &Path, detail: String) -> InputError {
    InputError::Npy {
        path: path.to_path_buf(),
        detail,
    }
}

fn plain_type(npy: &NpyFile<BufReader<File>>) -> Option<(TypeChar, u64)> {
    match npy.dtype() {
        DType::Plain(t) => Some((t.type_char(), t.size_field())),
        _ => None,
    }
}

fn read_npy_logits(path: &Path) -> Result<LogitsTable, InputError> {
    let npy = open_npy(path)?;
    let shape = npy.shape().to_vec();
    if shape.len() != 2 {
        return Err(npy_error(
            path,
            format!("logits must have shape [n, K], found {shape:?}"),
        ));
    }
    let num_classes = shape[1] as usize;
    if num_classes < 2 {
        return Err(InputError::TooFewClasses {
            path: path.to_path_buf(),
            num_classes,
        });
    }
    let order = npy.order();
    let read_error = |e: std::io::Error| npy_error(path, format!("cannot read data: {e}"));
    let values: Vec<f64> = match plain_type(&npy) {
        Some((TypeChar::Float, 4)) => npy
            .into_vec::<f32>()
            .map_err(read_error)?
            .into_iter()
            .map(f64::from)
            .collect(),
        Some((TypeChar::Float, 8)) => npy.into_vec::<f64>().map_err(read_error)?,
        _ => {
            return Err(npy_error(
                path,
                format!("logits must be float32 or float64, found {:?}", npy.dtype()),
            ))
        }
    };
    // A Fortran-ordered [n, K] array (NumPy saves e.g. a transposed [K, n] array so) lists
    // column 0 first: bring it to row-major.
    let values = match order {
        Order::C => values,
        Order::Fortran => {
            let rows = values.len() / num_classes;
            (0..values.len())
                .map(|index| values[(index % num_classes) * rows + index / num_classes])
                .collect()
        }
    };
    let mut logits = Vec::with_capacity(values.len());
    for (index, &value) in values.iter().enumerate() {
        if !value.is_finite() || !(value as f32).is_finite() {
            return Err(InputError::NonFinite {
                path: path.to_path_buf(),
                location: format!(
                    "row {}, column {}",
                    index / num_classes,
                    index % num_classes
                ),
                value,
            });
        }
        logits.push(value as f32);
    }
    Ok(LogitsTable {
        values: logits,
        num_classes,
    })
}

fn read_npy_labels(path: &Path) -> Result<Vec<u32>, InputError> {
    let npy = open_npy(path)?;
    let shape = npy.shape().to_vec();
    if shape.len() != 1 {
        return Err(npy_error(
            path,
            format!("labels must have shape [n], found {shape:?}"),
        ));
    }
    let read_error = |e: std::io::Error| npy_error(path, format!("cannot read data: {e}"));
    let values: Vec<i128> = match plain_type(&npy) {
        Some((TypeChar::Int, 1)) => widen(npy.into_vec::<i8>().map_err(read_error)?),
        Some((TypeChar::Int, 2)) => widen(npy.into_vec::<i16>().map_err(read_error)?),
        Some((TypeChar::Int, 4)) => widen(npy.into_vec::<i32>().map_err(read_error)?),
        Some((TypeChar::Int, 8)) => widen(npy.into_vec::<i64>().map_err(read_error)?),
        Some((TypeChar::Uint, 1)) => widen(npy.into_vec::<u8>().map_err(read_error)?),
        Some((TypeChar::Uint, 2)) => widen(npy.into_vec::<u16>().map_err(read_error)?),
        Some((TypeChar::Uint, 4)) => widen(npy.into_vec::<u32>().map_err(read_error)?),
        Some((TypeChar::Uint, 8)) => widen(npy.into_vec::<u64>().map_err(read_error)?),
        _ => {
            return Err(npy_error(
                path,
                format!("labels must be integers, found {:?}", npy.dtype()),
            ))
        }
    };
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            u32::try_from(value).map_err(|_| {
                npy_error(
                    path,
                    format!("label {value} at index {index} is negative or too large"),
                )
            })
        })
        .collect()
}

fn widen<T: Into<i128>>(values: Vec<T>) -> Vec<i128> {
    values.into_iter().map(Into::into).collect()
}

/// The file's text, without the byte-order mark some spreadsheet programs write first (kept,
/// it would make a first data row look like a header).
fn read_text(path: &Path) -> Result<String, InputError> {
    let text = std::fs::read_to_string(path).map_err(|error| InputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Splits a text row on commas when it has any, else on white space.
fn fields(line: &str) -> Vec<&str> {
    if line.contains(',') {
        line.split(',').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    }
}

fn read_text_logits(path: &Path) -> Result<LogitsTable, InputError> {
    let text = read_text(path)?;
    let mut values = Vec::new();
    let mut num_classes = None;
    let mut first_row = true;
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let row = fields(line);
        let parsed: Result<Vec<f64>, _> = row.iter().map(|f| f.parse::<f64>()).collect();
        let text_error = |detail: String| InputError::Text {
            path: path.to_path_buf(),
            line: line_number,
            detail,
        };
        let parsed = match parsed {
            Ok(parsed) => parsed,
            // A first row that is not numbers is a header.
            Err(_) if first_row => {
                first_row = false;
                num_classes = Some(row.len());
                continue;
            }
            Err(_) => {
                let bad = row
                    .iter()
                    .find(|f| f.parse::<f64>().is_err())
                    .unwrap_or(&"");
                return Err(text_error(format!("'{bad}' is not a number")));
            }
        };
        first_row = false;
        let expected = *num_classes.get_or_insert(parsed.len());
        if parsed.len() != expected {
            return Err(text_error(format!(
                "{} values, expected {expected} like the rows before",
                parsed.len()
            )));
        }
        for (column, &value) in parsed.iter().enumerate() {
            if !value.is_finite() || !(value as f32).is_finite() {
                return Err(InputError::NonFinite {
                    path: path.to_path_buf(),
                    location: format!("line {line_number}, column {column}"),
                    value,
                });
            }
            values.push(value as f32);
        }
    }
    Ok(LogitsTable {
        values,
        num_classes: num_classes.unwrap_or(0),
    })
}

fn read_text_labels(path: &Path) -> Result<Vec<u32>, InputError> {
    let text = read_text(path)?;
    let mut labels = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let field = line.trim();
        if field.is_empty() {
            continue;
        }
        let label = field.parse::<u32>().map_err(|_| InputError::Text {
            path: path.to_path_buf(),
            line: index + 1,
            detail: format!("'{field}' is not a label (a non-negative integer)"),
        })?;
        labels.push(label);
    }
    Ok(labels)
}

/// Writes `[n, K]` logits as a float32 `.npy` file.
///
/// # Errors
/// The file cannot be written.
pub fn write_npy_logits(path: &Path, logits: &[f32], num_classes: usize) -> Result<(), InputError> {
    use npyz::WriterBuilder;
    let io_error = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = std::io::BufWriter::new(File::create(path).map_err(io_error)?);
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[(logits.len() / num_classes) as u64, num_classes as u64])
        .writer(file)
        .begin_nd()
        .map_err(io_error)?;
    writer.extend(logits.iter().copied()).map_err(io_error)?;
    writer.finish().map_err(io_error)
}
