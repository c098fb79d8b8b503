//! Reading logits and labels from `.npy` or text files, with messages that name the file and,
//! for text, the line. The parsers take the file's bytes, so the CLI, the page (a reader's own
//! logits, [`crate::page::own_logits`]) and the fuzz targets (`fuzz/`, run by `scripts/fuzz`)
//! run the same code.
//!
//! Logits: `.npy` of float16, float32 or float64 with shape `[n, K]`, or text with one row of K numbers a line
//! (comma- or whitespace-separated, as NumPy's `savetxt` writes), an optional header row and
//! blank lines ignored; a first row is a header only when none of its fields is a number.
//! Labels: `.npy` of any integer dtype with shape `[n]`, or one integer a line (or an integral
//! float, as `np.savetxt` writes integers).
//!
//! Pictures (natively; the page decodes them with the browser): a PNG (recognised by its
//! signature) is decoded to RGBA and prepared as the page prepares a reader's picture
//! ([`crate::own_image::prepare`]), into one 28×28 image.
//!
//! A `.npy` header is read here before npyz sees the file, because npyz multiplies the shape's
//! dimensions unchecked: a header declaring shape `(2**40, 2**40)` makes a debug build panic
//! and a release build wrap. The header must be the dictionary NumPy writes,
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), }` (each key once, strings
//! without escapes, the shape a tuple of decimal integers), its element count must fit in
//! `usize`, and the data after it must be exactly that many elements of the dtype's size.

use std::io::Read;
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
    #[error("{path}: byte {offset}: not UTF-8 text")]
    NotText { path: PathBuf, offset: usize },
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
    #[error("{path}: not a PNG this tool can decode: {detail}")]
    Picture { path: PathBuf, detail: String },
    #[error("{path}: {error}")]
    OwnImage {
        path: PathBuf,
        error: crate::own_image::OwnImageError,
    },
    #[error("{path}: {labels} labels, but {logits_path} has {rows} rows")]
    LabelCount {
        path: PathBuf,
        labels: usize,
        logits_path: PathBuf,
        rows: usize,
    },
    #[error("{path}: label {label} at row {row} is outside [0, {num_classes})")]
    LabelOutOfRange {
        path: PathBuf,
        label: u32,
        row: usize,
        num_classes: usize,
    },
    #[error("{path}: every row is non-negative and sums to 1, so these look like probabilities, not logits")]
    Probabilities { path: PathBuf },
    #[error(
        "{path}: {names} class names, but the logits have {num_classes} classes (one name a line)"
    )]
    ClassNameCount {
        path: PathBuf,
        names: usize,
        num_classes: usize,
    },
    #[error("{path}: line {line}: an empty class name")]
    EmptyClassName { path: PathBuf, line: usize },
}

/// The eight bytes every PNG file starts with.
const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// Whether `bytes` are a PNG file, by its signature.
pub fn is_png(bytes: &[u8]) -> bool {
    bytes.starts_with(&PNG_SIGNATURE)
}

/// The 28×28 image (`[1, 28, 28]` bytes) the page makes of the PNG picture `bytes`, negated as
/// `invert` says.
///
/// # Errors
/// [`InputError::Picture`] for a file the PNG decoder refuses, [`InputError::OwnImage`] for a
/// picture too large or blank.
#[cfg(not(target_arch = "wasm32"))]
pub fn parse_png_picture(
    bytes: &[u8],
    invert: crate::own_image::Invert,
    path: &Path,
) -> Result<Vec<u8>, InputError> {
    let picture = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .map_err(|e| InputError::Picture {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?
        .to_rgba8();
    let (width, height) = (picture.width() as usize, picture.height() as usize);
    crate::own_image::prepare(picture.as_raw(), width, height, invert)
        .map(|prepared| prepared.pixels)
        .map_err(|error| InputError::OwnImage {
            path: path.to_path_buf(),
            error,
        })
}

/// Row-major `[n, K]` logits.
#[derive(Debug, Clone, PartialEq)]
pub struct LogitsTable {
    pub values: Vec<f32>,
    pub num_classes: usize,
}

impl LogitsTable {
    /// Number of rows.
    pub fn rows(&self) -> usize {
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

/// How a logits or labels file is written, told by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Npy,
    Text,
    /// IDX unsigned bytes (gzipped or not), as MNIST-style label files ship.
    Idx,
}

impl Format {
    /// The format a file's extension names.
    ///
    /// # Errors
    /// [`InputError::UnknownExtension`] for any other name.
    pub fn of(path: &Path) -> Result<Format, InputError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("npy") => Ok(Format::Npy),
            Some(e) if e.eq_ignore_ascii_case("csv") || e.eq_ignore_ascii_case("txt") => {
                Ok(Format::Text)
            }
            Some(e) if e.eq_ignore_ascii_case("gz") || e.eq_ignore_ascii_case("idx") => {
                Ok(Format::Idx)
            }
            _ if path.to_string_lossy().ends_with("-ubyte") => Ok(Format::Idx),
            _ => Err(InputError::UnknownExtension {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// Reads a logits file, in the format its name tells (see [`parse_logits`]).
///
/// # Errors
/// An unknown extension, an unreadable file, or any error of [`parse_logits`].
pub fn read_logits(path: &Path) -> Result<LogitsTable, InputError> {
    let format = Format::of(path)?;
    parse_logits(&read_bytes(path)?, format, path)
}

/// Reads a labels file, in the format its name tells (see [`parse_labels`]).
///
/// # Errors
/// An unknown extension, an unreadable file, or any error of [`parse_labels`].
pub fn read_labels(path: &Path) -> Result<Vec<u32>, InputError> {
    let format = Format::of(path)?;
    parse_labels(&read_bytes(path)?, format, path)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    std::fs::read(path).map_err(|error| InputError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// Parses the bytes of a logits file in `format`; `path` names it in messages.
///
/// # Errors
/// A malformed file, a ragged or non-numeric row (with its line), a non-finite value (with
/// its row and column), no rows, fewer than two columns, or IDX (which holds no logits).
pub fn parse_logits(bytes: &[u8], format: Format, path: &Path) -> Result<LogitsTable, InputError> {
    let table = match format {
        Format::Npy => parse_npy_logits(bytes, path)?,
        Format::Text => parse_text_logits(bytes, path)?,
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

/// Parses the bytes of a labels file in `format`; `path` names it in messages. Range checks
/// against the number of classes are the caller's.
///
/// # Errors
/// A malformed file, a non-integer or negative label (with its line or index), or no rows.
pub fn parse_labels(bytes: &[u8], format: Format, path: &Path) -> Result<Vec<u32>, InputError> {
    let labels = match format {
        Format::Npy => parse_npy_labels(bytes, path)?,
        Format::Text => parse_text_labels(bytes, path)?,
        Format::Idx => crate::data::parse_idx_labels(bytes, &path.display().to_string())
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

/// Checks that `labels` (read from `labels_path`) label the rows of `logits` (read from
/// `logits_path`): one label a row, each in `[0, K)`.
///
/// # Errors
/// [`InputError::LabelCount`], [`InputError::LabelOutOfRange`] (the first such row), both
/// naming the labels file.
pub fn check_labels(
    logits: &LogitsTable,
    logits_path: &Path,
    labels: &[u32],
    labels_path: &Path,
) -> Result<(), InputError> {
    if labels.len() != logits.rows() {
        return Err(InputError::LabelCount {
            path: labels_path.to_path_buf(),
            labels: labels.len(),
            logits_path: logits_path.to_path_buf(),
            rows: logits.rows(),
        });
    }
    match labels
        .iter()
        .enumerate()
        .find(|(_, &label)| label as usize >= logits.num_classes)
    {
        Some((row, &label)) => Err(InputError::LabelOutOfRange {
            path: labels_path.to_path_buf(),
            label,
            row,
            num_classes: logits.num_classes,
        }),
        None => Ok(()),
    }
}

/// Refuses logits that look like probabilities ([`crate::calibration::looks_like_probabilities`]):
/// every metric here would be computed on the softmax of probabilities, which is not what
/// anyone wants. The caller may offer the conversion `log p`.
///
/// # Errors
/// [`InputError::Probabilities`].
pub fn check_not_probabilities(logits: &LogitsTable, path: &Path) -> Result<(), InputError> {
    let view =
        crate::calibration::Logits::new(&logits.values, logits.num_classes).map_err(|e| {
            InputError::Npy {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }
        })?;
    if crate::calibration::looks_like_probabilities(&view) {
        return Err(InputError::Probabilities {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Parses a class-names file: UTF-8 text, one name a line (surrounding spaces and a final
/// newline ignored), exactly one line per class.
///
/// # Errors
/// [`InputError::NotText`], [`InputError::EmptyClassName`] (with its line),
/// [`InputError::ClassNameCount`].
pub fn parse_class_names(
    bytes: &[u8],
    path: &Path,
    num_classes: usize,
) -> Result<Vec<String>, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::NotText {
        path: path.to_path_buf(),
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.strip_suffix('\n').unwrap_or(text);
    let names: Vec<String> = text
        .split('\n')
        .map(|line| line.trim().to_string())
        .collect();
    if names.len() != num_classes {
        return Err(InputError::ClassNameCount {
            path: path.to_path_buf(),
            names: names.len(),
            num_classes,
        });
    }
    if let Some(index) = names.iter().position(String::is_empty) {
        return Err(InputError::EmptyClassName {
            path: path.to_path_buf(),
            line: index + 1,
        });
    }
    Ok(names)
}

/// Opens the bytes of a `.npy` file whose header has been checked (see the module doc): npyz
/// gets them only when the shape's element count and byte size fit in `usize` and match the
/// data's length.
fn open_npy<'a>(bytes: &'a [u8], path: &Path) -> Result<NpyFile<&'a [u8]>, InputError> {
    let file_length = bytes.len() as u64;
    let header = read_npy_header(&mut &bytes[..], file_length).map_err(|e| npy_error(path, e))?;
    let shape = &header.shape;
    let elements = element_count(shape).ok_or_else(|| {
        let dimensions = if shape.contains(&0) {
            "its non-zero dimensions"
        } else {
            "its dimensions"
        };
        npy_error(
            path,
            format!(
                "the header's shape {shape:?} overflows: {dimensions} multiply to more than {}",
                usize::MAX
            ),
        )
    })?;
    let npy = NpyFile::new(bytes).map_err(|e| npy_error(path, format!("not a .npy file: {e}")))?;
    // npyz refuses a dtype whose size overflows usize, so this error is for completeness.
    let item_size = npy
        .dtype()
        .num_bytes()
        .ok_or_else(|| npy_error(path, "the dtype's size overflows".to_string()))?;
    let data_size = elements.checked_mul(item_size).ok_or_else(|| {
        npy_error(
            path,
            format!(
                "the header's shape {shape:?} of {item_size}-byte values overflows: its size in \
                 bytes is more than {}",
                usize::MAX
            ),
        )
    })?;
    let data_length = file_length - header.data_offset;
    if data_size as u64 != data_length {
        return Err(npy_error(
            path,
            format!(
                "the header's shape {shape:?} of {item_size}-byte values needs {data_size} bytes \
                 of data, but the file has {data_length}"
            ),
        ));
    }
    Ok(npy)
}

/// What [`read_npy_header`] checks before npyz reads a `.npy` header.
struct CheckedNpyHeader {
    shape: Vec<u64>,
    /// Bytes before the data: magic, version, header length and header.
    data_offset: u64,
}

/// Reads the preamble and header of a `.npy` file of `file_length` bytes: the magic
/// `\x93NUMPY`, version 1.0 (2-byte little-endian header length) or 2.0/3.0 (4-byte), and the
/// header's dictionary (see [`header_shape`]).
///
/// # Errors
/// A message for a file without the magic, of another version, whose header runs past its
/// end, or whose header is not NumPy's dictionary.
fn read_npy_header(reader: &mut impl Read, file_length: u64) -> Result<CheckedNpyHeader, String> {
    let mut preamble = [0_u8; 8];
    if reader.read_exact(&mut preamble).is_err() || &preamble[..6] != b"\x93NUMPY" {
        return Err("not a .npy file: it does not start with \\x93NUMPY".to_string());
    }
    let length_size = match (preamble[6], preamble[7]) {
        (1, 0) => 2,
        (2 | 3, 0) => 4,
        (major, minor) => {
            return Err(format!(
                "not a .npy file: format version {major}.{minor} (known: 1.0, 2.0, 3.0)"
            ))
        }
    };
    // Little-endian: a 2-byte length fills the low half.
    let mut length_bytes = [0_u8; 4];
    reader
        .read_exact(&mut length_bytes[..length_size])
        .map_err(|_| "not a .npy file: it ends inside the header length".to_string())?;
    let header_length = u64::from(u32::from_le_bytes(length_bytes));
    let data_offset = 8 + length_size as u64 + header_length;
    if data_offset > file_length {
        return Err(format!(
            "the header length {header_length} runs past the end of the file ({file_length} bytes)"
        ));
    }
    // At most the file's length, so a hostile length cannot ask for a huge buffer.
    let mut header = vec![0_u8; header_length as usize];
    reader
        .read_exact(&mut header)
        .map_err(|e| format!("cannot read the header: {e}"))?;
    let text = std::str::from_utf8(&header).map_err(|_| "the header is not text".to_string())?;
    let shape =
        header_shape(text).map_err(|e| format!("the header is not NumPy's dictionary: {e}"))?;
    Ok(CheckedNpyHeader { shape, data_offset })
}

/// The element count of `shape`, or `None` when it does not fit in `usize`. npyz also
/// multiplies the non-zero dimensions alone (its strides), so their product must fit too, even
/// when a zero dimension makes the count 0.
fn element_count(shape: &[u64]) -> Option<usize> {
    let non_zero = shape
        .iter()
        .filter(|&&dimension| dimension != 0)
        .try_fold(1_u64, |product, &dimension| product.checked_mul(dimension))?;
    let non_zero = usize::try_from(non_zero).ok()?;
    Some(if shape.contains(&0) { 0 } else { non_zero })
}

/// The shape in a `.npy` header, read in the subset of Python literals NumPy writes:
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), }`, each key exactly once,
/// strings in single or double quotes without escapes, `descr` a type string, `fortran_order`
/// `True` or `False`, `shape` a tuple (or list) of decimal integers, then only white space.
/// npyz parses such a text to the same values.
///
/// # Errors
/// What is wrong, for any other text.
fn header_shape(text: &str) -> Result<Vec<u64>, String> {
    let mut header = HeaderText { rest: text };
    header.expect('{')?;
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    while !header.eat('}') {
        let key = header.string()?;
        header.expect(':')?;
        let repeated = match key {
            "descr" if header.eat('[') => {
                return Err(
                    "'descr' is a list of fields: structured arrays are not read".to_string(),
                )
            }
            "descr" => descr.replace(header.string()?).is_some(),
            "fortran_order" => fortran_order.replace(header.boolean()?).is_some(),
            "shape" => shape.replace(header.dimensions()?).is_some(),
            other => return Err(format!("unexpected key '{other}'")),
        };
        if repeated {
            return Err(format!("key '{key}' appears twice"));
        }
        if !header.eat(',') {
            header.expect('}')?;
            break;
        }
    }
    if !header.rest.trim_ascii().is_empty() {
        return Err("text after the closing '}'".to_string());
    }
    match (descr, fortran_order, shape) {
        (Some(_), Some(_), Some(shape)) => Ok(shape),
        (None, _, _) => Err("no 'descr' key".to_string()),
        (_, None, _) => Err("no 'fortran_order' key".to_string()),
        (_, _, None) => Err("no 'shape' key".to_string()),
    }
}

/// The unread rest of a `.npy` header, for [`header_shape`].
struct HeaderText<'a> {
    rest: &'a str,
}

impl<'a> HeaderText<'a> {
    /// Skips white space, then consumes `symbol` if it comes next.
    fn eat(&mut self, symbol: char) -> bool {
        self.rest = self.rest.trim_ascii_start();
        match self.rest.strip_prefix(symbol) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, symbol: char) -> Result<(), String> {
        if self.eat(symbol) {
            Ok(())
        } else {
            Err(format!("expected '{symbol}' at {}", self.here()))
        }
    }

    /// The next few characters, for a message.
    fn here(&self) -> String {
        let next: String = self.rest.chars().take(12).collect();
        if next.is_empty() {
            "the end".to_string()
        } else {
            format!("{next:?}")
        }
    }

    /// A string in single or double quotes, without escapes.
    fn string(&mut self) -> Result<&'a str, String> {
        self.rest = self.rest.trim_ascii_start();
        let quote = match self.rest.chars().next() {
            Some(quote @ ('\'' | '"')) => quote,
            _ => return Err(format!("expected a quoted string at {}", self.here())),
        };
        let body = &self.rest[1..];
        let end = body
            .find([quote, '\\', '\n'])
            .filter(|&end| body[end..].starts_with(quote))
            .ok_or_else(|| format!("unterminated or escaped string at {}", self.here()))?;
        self.rest = &body[end + 1..];
        Ok(&body[..end])
    }

    /// `True` or `False`.
    fn boolean(&mut self) -> Result<bool, String> {
        self.rest = self.rest.trim_ascii_start();
        for (word, value) in [("True", true), ("False", false)] {
            if let Some(rest) = self.rest.strip_prefix(word) {
                if !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    self.rest = rest;
                    return Ok(value);
                }
            }
        }
        Err(format!("expected True or False at {}", self.here()))
    }

    /// A tuple or list of decimal integers, e.g. `(8, 3)`, `(8,)`, `()`.
    fn dimensions(&mut self) -> Result<Vec<u64>, String> {
        let close = if self.eat('(') {
            ')'
        } else if self.eat('[') {
            ']'
        } else {
            return Err(format!("expected a tuple of integers at {}", self.here()));
        };
        let mut dimensions = Vec::new();
        while !self.eat(close) {
            let digits_end = self
                .rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(self.rest.len());
            let digits = &self.rest[..digits_end];
            if digits.is_empty() {
                return Err(format!("expected a dimension at {}", self.here()));
            }
            let dimension = digits
                .parse::<u64>()
                .map_err(|_| format!("dimension {digits} overflows: it exceeds {}", u64::MAX))?;
            dimensions.push(dimension);
            self.rest = &self.rest[digits_end..];
            if !self.eat(',') {
                self.expect(close)?;
                break;
            }
        }
        Ok(dimensions)
    }
}

fn npy_error(path: &Path, detail: String) -> InputError {
    InputError::Npy {
        path: path.to_path_buf(),
        detail,
    }
}

fn plain_type(npy: &NpyFile<&[u8]>) -> Option<(TypeChar, u64)> {
    match npy.dtype() {
        DType::Plain(t) => Some((t.type_char(), t.size_field())),
        _ => None,
    }
}

fn parse_npy_logits(bytes: &[u8], path: &Path) -> Result<LogitsTable, InputError> {
    let npy = open_npy(bytes, path)?;
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
        Some((TypeChar::Float, 2)) => npy
            .into_vec::<half::f16>()
            .map_err(read_error)?
            .into_iter()
            .map(f64::from)
            .collect(),
        _ => {
            return Err(npy_error(
                path,
                format!(
                    "logits must be float16, float32 or float64, found dtype {}",
                    npy.dtype().descr()
                ),
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

fn parse_npy_labels(bytes: &[u8], path: &Path) -> Result<Vec<u32>, InputError> {
    let npy = open_npy(bytes, path)?;
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
                format!(
                    "labels must be integers, found dtype {}",
                    npy.dtype().descr()
                ),
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
fn text_of<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a str, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|error| InputError::NotText {
        path: path.to_path_buf(),
        offset: error.valid_up_to(),
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Splits a text row on commas when it has any, else on white space.
fn fields(line: &str) -> Vec<&str> {
    if line.contains(',') {
        line.split(',').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    }
}

fn parse_text_logits(bytes: &[u8], path: &Path) -> Result<LogitsTable, InputError> {
    let text = text_of(bytes, path)?;
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
            // A first row without a single number is a header; one with some numbers is a data
            // row with a typo, which must not vanish as a header.
            Err(_) if first_row && row.iter().all(|f| f.parse::<f64>().is_err()) => {
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

fn parse_text_labels(bytes: &[u8], path: &Path) -> Result<Vec<u32>, InputError> {
    let text = text_of(bytes, path)?;
    let mut labels = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let field = line.trim();
        if field.is_empty() {
            continue;
        }
        let label = text_label(field).ok_or_else(|| InputError::Text {
            path: path.to_path_buf(),
            line: index + 1,
            detail: format!("'{field}' is not a label (a non-negative integer)"),
        })?;
        labels.push(label);
    }
    Ok(labels)
}

/// A label written as an integer (`3`) or as a float with an integral value, as NumPy's
/// `savetxt` writes integers by default (`3.000000000000000000e+00`).
fn text_label(field: &str) -> Option<u32> {
    field.parse::<u32>().ok().or_else(|| {
        let value = field.parse::<f64>().ok()?;
        let integral = value.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&value);
        integral.then_some(value as u32)
    })
}

/// Writes a row-major `[n, width]` matrix (logits, or a network's features) as a float32
/// `.npy` file.
///
/// # Errors
/// The file cannot be written.
pub fn write_npy_matrix(path: &Path, values: &[f32], width: usize) -> Result<(), InputError> {
    use npyz::WriterBuilder;
    let io_error = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io_error)?);
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[(values.len() / width) as u64, width as u64])
        .writer(file)
        .begin_nd()
        .map_err(io_error)?;
    writer.extend(values.iter().copied()).map_err(io_error)?;
    writer.finish().map_err(io_error)
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
