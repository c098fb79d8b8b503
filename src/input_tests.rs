//! Unit tests of `input.rs` on bytes in memory; tests/cli.rs reads real files through the CLI.

use super::*;

fn logits(text: &str) -> Result<LogitsTable, InputError> {
    parse_logits(text.as_bytes(), Format::Text, Path::new("l.csv"))
}

#[test]
fn text_logits_skip_a_header_a_byte_order_mark_and_blank_lines() {
    let table = logits("\u{feff}a,b\n1, 2\n\n3,-4.5\n").unwrap();
    assert_eq!(table.values, vec![1.0, 2.0, 3.0, -4.5]);
    assert_eq!((table.num_classes, table.rows()), (2, 2));
}

#[test]
fn bytes_that_are_not_utf8_are_named_by_offset() {
    let bytes = b"1,2\n3,\xff\n";
    let e = parse_logits(bytes, Format::Text, Path::new("l.csv")).unwrap_err();
    assert_eq!(e.to_string(), "l.csv: byte 6: not UTF-8 text");
    let e = parse_labels(bytes, Format::Text, Path::new("y.txt")).unwrap_err();
    assert_eq!(e.to_string(), "y.txt: byte 6: not UTF-8 text");
}

#[test]
fn a_ragged_row_and_a_non_finite_value_are_named_by_line() {
    let e = logits("1,2\n3\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "l.csv: line 2: 1 values, expected 2 like the rows before"
    );
    let e = logits("1,2\n3,inf\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("l.csv: line 2, column 1: value inf"),
        "{e}"
    );
}

#[test]
fn idx_labels_are_read_from_bytes_and_idx_logits_refused() {
    let idx = [0, 0, 8, 1, 0, 0, 0, 2, 7, 3];
    let labels = parse_labels(&idx, Format::Idx, Path::new("y.idx")).unwrap();
    assert_eq!(labels, vec![7, 3]);
    let e = parse_logits(&idx, Format::Idx, Path::new("y.idx")).unwrap_err();
    assert!(e.to_string().contains("not logits"), "{e}");
}

#[test]
fn a_first_row_with_a_typo_is_an_error_not_a_header() {
    let e = logits("1.5,2.O,3\n4,5,6\n").unwrap_err();
    assert_eq!(e.to_string(), "l.csv: line 1: '2.O' is not a number");
    // A header has no number at all; the data after it keep its width.
    let table = logits("z0,z1,z2\n4,5,6\n").unwrap();
    assert_eq!((table.rows(), table.num_classes), (1, 3));
}

#[test]
fn labels_written_by_savetxt_as_integral_floats_are_read() {
    let text = "0.000000000000000000e+00\n9.000000000000000000e+00\n3\n";
    let labels = parse_labels(text.as_bytes(), Format::Text, Path::new("y.txt")).unwrap();
    assert_eq!(labels, vec![0, 9, 3]);
    for bad in ["2.5", "-1", "-1.0e+00", "nan", "4.3e9"] {
        let e = parse_labels(bad.as_bytes(), Format::Text, Path::new("y.txt")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("y.txt: line 1: '{bad}' is not a label (a non-negative integer)")
        );
    }
}

/// A version 1.0 `.npy` file of `descr` values with `shape`, as NumPy writes it.
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let tuple = if shape.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let dictionary = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    let unpadded = 10 + dictionary.len() + 1;
    let header = format!("{dictionary}{}\n", " ".repeat((64 - unpadded % 64) % 64));
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

#[test]
fn float16_logits_are_read_as_their_exact_values() {
    // Mixed-precision models save float16: 1.5, −2, 0.333251953125 (the nearest float16 to 1/3)
    // and 65504 (the largest) are exact in f32.
    let values = [1.5_f32, -2.0, 0.333_251_95, 65504.0];
    let data: Vec<u8> = values
        .iter()
        .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
        .collect();
    let table = parse_logits(
        &npy("<f2", &[2, 2], &data),
        Format::Npy,
        Path::new("half.npy"),
    )
    .unwrap();
    assert_eq!(table.values, values);
    assert_eq!(table.num_classes, 2);
}

#[test]
fn a_refused_dtype_is_named_as_numpy_names_it() {
    let ints: Vec<u8> = [1_i32, 2, 3, 4]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let error = parse_logits(
        &npy("<i4", &[2, 2], &ints),
        Format::Npy,
        Path::new("int.npy"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("logits must be float16, float32 or float64, found dtype '<i4'"),
        "{error}"
    );
    assert!(
        !error.contains("Plain") && !error.contains("TypeStr"),
        "{error}"
    );
    let floats: Vec<u8> = [1.0_f64, 2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let error = parse_labels(
        &npy("<f8", &[2], &floats),
        Format::Npy,
        Path::new("labels.npy"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("labels must be integers, found dtype '<f8'"),
        "{error}"
    );
}
