//! The format the bundled networks ship in: a safetensors file in which the first dense layer's
//! weight matrix, 401,408 of the network's 421,642 numbers, is stored in 8 bits, and every
//! other tensor in f16 (IEEE half precision).
//!
//! Each row of that matrix (the weights into one of its 128 units) keeps a scale of its own,
//! `s = max |w| / 127` in f32, under the name `dense1.weight_scale`; the row's weights are
//! stored as the signed bytes `q = round(w / s)`, and read back as `q · s`. A weight moves by
//! at most `s / 2`, 0.4% of its row's largest. The file is half the size of one in f16 and a
//! quarter of one in f32 (0.42 MiB): it is the largest download before the page's
//! first chart, and one per network the τ slider shows. The evaluation in every model card,
//! the fixtures and the figures are computed from these weights as read back, which is what
//! the page, the CLI and the benchmark's peers all run (in f32).
//!
//! [`decode`] also reads safetensors with every tensor in f16 or f32 (a network trained
//! elsewhere, or the files of earlier versions), and [`is_shipped`] tells the two apart.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use safetensors::tensor::{Dtype, TensorView};
use safetensors::{SafeTensors, View};

use super::ModelError;

/// The tensor stored in 8 bits, and the suffix of the name its row scales are stored under.
pub const EIGHT_BIT: &str = "dense1.weight";
pub const SCALE_SUFFIX: &str = "_scale";

/// Largest stored byte: the row's largest weight in magnitude is stored as ±127.
const LEVELS: f32 = 127.0;

/// The safetensors bytes of `tensors` (any float dtype) in the shipped format.
///
/// # Errors
/// [`ModelError::Weights`] when a tensor cannot be read as f32 or [`EIGHT_BIT`] is not a matrix.
pub fn encode(tensors: &HashMap<String, Tensor>) -> Result<Vec<u8>, ModelError> {
    let mut stored: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, tensor) in tensors {
        let shape = tensor.dims().to_vec();
        if name == EIGHT_BIT {
            let (rows, columns) = tensor.dims2().map_err(ModelError::Weights)?;
            let values: Vec<f32> = tensor
                .to_dtype(DType::F32)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1())
                .map_err(ModelError::Weights)?;
            let (bytes, scales) = quantize(&values, rows, columns);
            stored.push((name.clone(), Dtype::I8, shape, bytes));
            let scale_bytes = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
            stored.push((
                format!("{name}{SCALE_SUFFIX}"),
                Dtype::F32,
                vec![rows],
                scale_bytes,
            ));
        } else {
            let halves = tensor.to_dtype(DType::F16).map_err(ModelError::Weights)?;
            stored.push((name.clone(), Dtype::F16, shape, halves.data().into_owned()));
        }
    }
    let views = stored
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            TensorView::new(*dtype, shape.clone(), bytes)
                .map(|view| (name.as_str(), view))
                .map_err(|e| ModelError::WeightsFile(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::serialize(views, None).map_err(|e| ModelError::WeightsFile(e.to_string()))
}

/// Each row's scale and its weights as signed bytes: `round(w / s)` with `s = max |w| / 127`
/// (a row of zeros gets scale 0 and stores zeros).
fn quantize(values: &[f32], rows: usize, columns: usize) -> (Vec<u8>, Vec<f32>) {
    let mut bytes = Vec::with_capacity(values.len());
    let mut scales = Vec::with_capacity(rows);
    for row in (0..rows).map(|r| &values[r * columns..(r + 1) * columns]) {
        let largest = row.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        let scale = largest / LEVELS;
        scales.push(scale);
        bytes.extend(row.iter().map(|&w| {
            let level = if scale > 0.0 {
                (w / scale).round()
            } else {
                0.0
            };
            // In -127..=127 by the choice of scale: the cast cannot wrap.
            level.clamp(-LEVELS, LEVELS) as i8 as u8
        }));
    }
    (bytes, scales)
}

/// The tensors of a safetensors file, in f32: the shipped format's 8-bit matrix read back as
/// `q · s`, and f16 or f32 tensors as they are.
///
/// # Errors
/// [`ModelError::WeightsFile`] when the bytes are not safetensors, a tensor has another dtype,
/// or an 8-bit matrix has no scales of the right length.
pub fn decode(bytes: &[u8]) -> Result<HashMap<String, Tensor>, ModelError> {
    let file =
        SafeTensors::deserialize(bytes).map_err(|e| ModelError::WeightsFile(e.to_string()))?;
    let mut tensors = HashMap::new();
    for (name, view) in file.tensors() {
        if name.ends_with(SCALE_SUFFIX) && view.dtype() == Dtype::F32 {
            continue;
        }
        let tensor = match view.dtype() {
            Dtype::F32 | Dtype::F16 => {
                let dtype = if view.dtype() == Dtype::F32 {
                    DType::F32
                } else {
                    DType::F16
                };
                Tensor::from_raw_buffer(view.data(), dtype, view.shape(), &Device::Cpu)
                    .and_then(|t| t.to_dtype(DType::F32))
            }
            Dtype::I8 => {
                let values = dequantize(&file, &name, view.data(), view.shape())?;
                Tensor::from_vec(values, view.shape(), &Device::Cpu)
            }
            other => {
                return Err(ModelError::WeightsFile(format!(
                    "{name} is {other:?}; expected F32, F16, or I8 with row scales"
                )))
            }
        }
        .map_err(ModelError::Weights)?;
        tensors.insert(name, tensor);
    }
    Ok(tensors)
}

/// The 8-bit matrix `name` read back with its row scales.
fn dequantize(
    file: &SafeTensors,
    name: &str,
    levels: &[u8],
    shape: &[usize],
) -> Result<Vec<f32>, ModelError> {
    let scale_name = format!("{name}{SCALE_SUFFIX}");
    let missing = || {
        ModelError::WeightsFile(format!(
            "{name} is I8 but {scale_name} is missing or not {} F32 row scales",
            shape.first().unwrap_or(&0)
        ))
    };
    let scales = file.tensor(&scale_name).map_err(|_| missing())?;
    if shape.len() != 2 || scales.dtype() != Dtype::F32 || scales.shape() != [shape[0]] {
        return Err(missing());
    }
    let scales: Vec<f32> = scales
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    // A matrix of no columns has no levels (and `chunks` needs a size of at least 1).
    Ok(levels
        .chunks(shape[1].max(1))
        .zip(&scales)
        .flat_map(|(row, &scale)| row.iter().map(move |&q| f32::from(q as i8) * scale))
        .collect())
}

/// The network's variables from the bytes of a safetensors file ([`decode`]), read as `dtype`.
///
/// # Errors
/// As [`decode`].
pub fn var_builder(bytes: &[u8], dtype: DType) -> Result<VarBuilder<'static>, ModelError> {
    Ok(VarBuilder::from_tensors(
        decode(bytes)?,
        dtype,
        &Device::Cpu,
    ))
}

/// Whether `bytes` are a safetensors file in the shipped format.
pub fn is_shipped(bytes: &[u8]) -> bool {
    let scale_name = format!("{EIGHT_BIT}{SCALE_SUFFIX}");
    SafeTensors::deserialize(bytes).is_ok_and(|file| {
        let dtype = |name: &str| file.tensor(name).map(|view| view.dtype()).ok();
        dtype(EIGHT_BIT) == Some(Dtype::I8)
            && dtype(&scale_name) == Some(Dtype::F32)
            && file.names().into_iter().all(|name| {
                [EIGHT_BIT, scale_name.as_str()].contains(&name) || dtype(name) == Some(Dtype::F16)
            })
    })
}

#[cfg(test)]
#[path = "shipped_tests.rs"]
mod tests;
