//! Unit tests of `matrix_product.rs`: a product worked by hand, and random shapes against the
//! textbook triple loop, which must give the same bits (both sum over `k` in order), through
//! the AVX build where the CPU has AVX and through the plain one.

use proptest::prelude::*;

use super::*;

#[test]
fn a_product_worked_by_hand() {
    // a = [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]] (five rows: one tile and one row left over),
    // b = [[1, 0, 0, 0, 0, 0, 0, 2], [0, 1, 0, 0, 0, 0, 0, -1]].
    let a: Vec<f32> = (1..=10).map(|v| v as f32).collect();
    let mut b = vec![0.0; 16];
    b[0] = 1.0;
    b[7] = 2.0;
    b[9] = 1.0;
    b[15] = -1.0;
    let product = matrix_product(&a, &TiledColumns::new(&b, 2, 8));
    let expected_rows = [
        [1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0],
        [5.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0],
        [7.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0, 6.0],
        [9.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 8.0],
    ];
    assert_eq!(product, expected_rows.concat());
}

/// The textbook product, `Σ_k a[i, k]·b[k, j]` with `k` from zero, one element at a time.
fn textbook_product(a: &[f32], b: &[f32], inner: usize, columns: usize) -> Vec<f32> {
    let rows = a.len() / inner;
    let mut product = vec![0.0_f32; rows * columns];
    for i in 0..rows {
        for j in 0..columns {
            let mut sum = 0.0_f32;
            for k in 0..inner {
                sum += a[i * inner + k] * b[k * columns + j];
            }
            product[i * columns + j] = sum;
        }
    }
    product
}

proptest! {
    #[test]
    fn random_products_equal_the_textbook_loop_to_the_bit(
        rows in 1_usize..23,
        inner in 1_usize..40,
        column_tiles in 1_usize..5,
        seed in any::<u64>(),
    ) {
        let columns = column_tiles * TILE_COLUMNS;
        let mut state = seed;
        let mut next = || {
            // xorshift64*: values in [-1, 1) with all their mantissa bits busy.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        let a: Vec<f32> = (0..rows * inner).map(|_| next()).collect();
        let b: Vec<f32> = (0..inner * columns).map(|_| next()).collect();
        let tiled = TiledColumns::new(&b, inner, columns);
        let expected = textbook_product(&a, &b, inner, columns);
        // The product the CPU gets (AVX where it has it), and the plain one.
        for product in [matrix_product(&a, &tiled), super::product(&a, &tiled)] {
            let same_bits = product.iter().zip(&expected).all(|(p, e)| p.to_bits() == e.to_bits());
            prop_assert!(same_bits, "{product:?} != {expected:?}");
        }
    }
}
