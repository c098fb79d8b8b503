use super::*;

/// Tensors of the network's names and shapes, from a fixed formula (no file).
fn tensors() -> HashMap<String, Tensor> {
    let shapes: [(&str, &[usize]); 4] = [
        ("conv1.weight", &[2, 1, 3, 3]),
        ("conv1.bias", &[2]),
        ("dense1.weight", &[3, 5]),
        ("dense1.bias", &[3]),
    ];
    shapes
        .into_iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0).collect();
            let tensor = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
            (name.to_string(), tensor)
        })
        .collect()
}

fn values(tensor: &Tensor) -> Vec<f32> {
    tensor.flatten_all().unwrap().to_vec1().unwrap()
}

#[test]
fn eight_bit_rows_are_read_back_as_their_level_times_their_scale() {
    // Row [1, -2, 0.5, 4, -4.2]: scale 4.2 / 127; the levels round(w / s) are worked out by
    // hand, 30.238 -> 30, -60.476 -> -60, 15.119 -> 15, 120.952 -> 121, -127.
    let matrix =
        Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 4.0, -4.2], (1, 5), &Device::Cpu).unwrap();
    let bytes = encode(&HashMap::from([(EIGHT_BIT.to_string(), matrix)])).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let levels: Vec<i8> = file
        .tensor(EIGHT_BIT)
        .unwrap()
        .data()
        .iter()
        .map(|&b| b as i8)
        .collect();
    assert_eq!(levels, [30, -60, 15, 121, -127]);
    let scale = 4.2f32 / 127.0;
    let read = values(&decode(&bytes).unwrap()[EIGHT_BIT]);
    let expected: Vec<f32> = levels.iter().map(|&q| f32::from(q) * scale).collect();
    assert_eq!(read, expected);
}

#[test]
fn every_weight_moves_by_at_most_half_its_rows_step_and_the_rest_by_f16_rounding() {
    let original = tensors();
    let bytes = encode(&original).unwrap();
    assert!(is_shipped(&bytes));
    let read = decode(&bytes).unwrap();
    assert_eq!(
        read.len(),
        original.len(),
        "no scale tensor among the network's"
    );
    for (name, tensor) in &original {
        let (before, after) = (values(tensor), values(&read[name]));
        assert_eq!(read[name].dims(), tensor.dims(), "{name}");
        if name == EIGHT_BIT {
            for (row_before, row_after) in before.chunks(5).zip(after.chunks(5)) {
                let step = row_before.iter().fold(0.0f32, |m, w| m.max(w.abs())) / 127.0;
                for (b, a) in row_before.iter().zip(row_after) {
                    assert!(
                        (b - a).abs() <= step / 2.0 * (1.0 + 1e-6),
                        "{name}: {b} -> {a}"
                    );
                }
            }
        } else {
            // f16 keeps 11 significant bits: a relative error of at most 2^-11.
            for (b, a) in before.iter().zip(&after) {
                assert!(
                    (b - a).abs() <= b.abs() * 2f32.powi(-11),
                    "{name}: {b} -> {a}"
                );
            }
        }
    }
}

#[test]
fn a_row_of_zeros_stores_zeros() {
    let matrix = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    let bytes = encode(&HashMap::from([(EIGHT_BIT.to_string(), matrix)])).unwrap();
    assert_eq!(values(&decode(&bytes).unwrap()[EIGHT_BIT]), [0.0; 6]);
}

#[test]
fn f32_and_f16_files_are_read_but_are_not_the_shipped_format() {
    let original = tensors();
    let f32_bytes = safetensors::serialize(
        original
            .iter()
            .map(|(name, tensor)| (name.as_str(), tensor)),
        None,
    )
    .unwrap();
    assert!(!is_shipped(&f32_bytes));
    let read = decode(&f32_bytes).unwrap();
    for (name, tensor) in &original {
        assert_eq!(values(&read[name]), values(tensor), "{name}");
    }
}

#[test]
fn an_eight_bit_matrix_without_its_scales_is_refused_by_name() {
    let levels = [1u8, 2, 3];
    let view = TensorView::new(Dtype::I8, vec![1, 3], &levels).unwrap();
    let bytes = safetensors::serialize([(EIGHT_BIT, view)], None).unwrap();
    assert!(!is_shipped(&bytes));
    let error = decode(&bytes).unwrap_err().to_string();
    assert!(error.contains("dense1.weight_scale"), "{error}");
    let error = decode(b"not safetensors").unwrap_err().to_string();
    assert!(
        error.starts_with("cannot load the model weights"),
        "{error}"
    );
}

#[test]
fn an_eight_bit_matrix_of_no_columns_is_written_and_read_as_empty() {
    let scales = 1.0f32.to_le_bytes().repeat(2);
    let levels: [u8; 0] = [];
    let bytes = safetensors::serialize(
        [
            (
                EIGHT_BIT,
                TensorView::new(Dtype::I8, vec![2, 0], &levels).unwrap(),
            ),
            (
                "dense1.weight_scale",
                TensorView::new(Dtype::F32, vec![2], &scales).unwrap(),
            ),
        ],
        None,
    )
    .unwrap();
    assert_eq!(decode(&bytes).unwrap()[EIGHT_BIT].dims(), [2, 0]);
    let matrix = Tensor::zeros((2, 0), DType::F32, &Device::Cpu).unwrap();
    let encoded = encode(&HashMap::from([(EIGHT_BIT.to_string(), matrix)])).unwrap();
    assert_eq!(decode(&encoded).unwrap()[EIGHT_BIT].dims(), [2, 0]);
}
