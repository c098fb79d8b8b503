//! The matrix product under the convolutions (one per position of Winograd's 4×4 tiles:
//! `winograd.rs`) and the dense layers, `[rows, inner] × [inner, columns]`, written as plain
//! loops that LLVM vectorises (WebAssembly's `simd128`, natively SSE/AVX).
//!
//! It replaces candle's `Tensor::matmul` (the `gemm` crate) for every layer, for two reasons:
//!
//! - **V8 deoptimises `gemm` in WebAssembly.** `gemm` picks its kernels at run time through
//!   function pointers. In Chromium, after a worker had run one network and started a second,
//!   one of `gemm`'s functions became about twice as slow within seconds, in every run, and
//!   stayed slow (with `--js-flags=--no-wasm-deopt` it did not).
//!   The loops here have no indirect calls, so V8's speculative inlining has nothing to undo.
//! - **The same sums everywhere.** Each output is `Σ_k a[i, k]·b[k, j]`, summed in the order of
//!   `k` from zero, one rounding for the product and one for the sum (Rust never fuses them
//!   into a multiply-add). Vectorising runs several `j` side by side and does not change any
//!   one sum, and a row's sums do not depend on the other rows of its batch, so the network
//!   gives the same bits natively and in the browser, on any CPU, in batches of any size.
//!
//! The kernel computes a tile of [`TILE_ROWS`] × [`TILE_COLUMNS`] outputs at a time: for each
//! `k` it loads the tile's [`TILE_COLUMNS`] values of `b`'s row `k` once and uses them for all
//! of the tile's rows, and the tile's sums stay in registers (eight `f32x4`s) from the first
//! `k` to the last.
//!
//! In wasm this kernel runs as fast as `gemm` did, within run-to-run noise (docs/benchmarks.md
//! has the figures). Tiles of 6 × 8, 8 × 8, 5 × 8 and 4 × 16 were slower (V8 keeps 15 SIMD
//! registers on x86-64, and their sums no longer fit), 2 × 16 and 3 × 16 no faster.

/// Rows of the output that one tile computes together.
const TILE_ROWS: usize = 4;
/// Columns of the output that one tile computes together: two `f32x4`s. Every convolution of
/// the network has a multiple of it as its output channel count.
pub const TILE_COLUMNS: usize = 8;

/// The right-hand side of a product, `[inner, columns]`, stored one tile of [`TILE_COLUMNS`]
/// columns after the other, each `[inner, TILE_COLUMNS]` row-major: the kernel then reads a
/// tile's rows `k = 0, 1, …` from consecutive addresses. Built once per network, at load time.
#[derive(Debug)]
pub struct TiledColumns {
    inner: usize,
    columns: usize,
    values: Vec<f32>,
}

impl TiledColumns {
    /// Tiles `b`, `[inner, columns]` row-major.
    ///
    /// # Panics
    /// Unless `columns` is a multiple of [`TILE_COLUMNS`] (every convolution of the network has
    /// such a channel count) and `b` holds `inner × columns` values.
    pub fn new(b: &[f32], inner: usize, columns: usize) -> Self {
        assert!(columns.is_multiple_of(TILE_COLUMNS), "{columns} columns");
        assert_eq!(
            b.len(),
            inner * columns,
            "a right-hand side of {inner} × {columns}"
        );
        let mut values = Vec::with_capacity(b.len());
        for first in (0..columns).step_by(TILE_COLUMNS) {
            for row in b.chunks_exact(columns) {
                values.extend_from_slice(&row[first..first + TILE_COLUMNS]);
            }
        }
        Self {
            inner,
            columns,
            values,
        }
    }
}

/// `a × b` with `a` `[rows, inner]` row-major (`rows = a.len() / inner`), as a `[rows, columns]`
/// row-major vector.
///
/// # Panics
/// Unless `a`'s length is a multiple of `b`'s inner dimension.
pub fn matrix_product(a: &[f32], b: &TiledColumns) -> Vec<f32> {
    assert!(
        a.len().is_multiple_of(b.inner),
        "{} values are not rows of {}",
        a.len(),
        b.inner
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: `matrix_product_avx` only needs AVX, which the CPU was just found to have.
        return unsafe { matrix_product_avx(a, b) };
    }
    product(a, b)
}

/// [`product`] compiled for AVX: eight lanes a vector instead of SSE's four. Natively the crate
/// targets plain x86-64 (SSE2), and there the loops ran at half the rate of `gemm`, which picks
/// AVX kernels at run time (`inference_speed` example). Only AVX is enabled, not FMA, so every sum is still the same as in [`product`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn matrix_product_avx(a: &[f32], b: &TiledColumns) -> Vec<f32> {
    product(a, b)
}

/// The product itself, inlined into each of its callers so that each compiles it for its own
/// instruction set.
#[inline(always)]
fn product(a: &[f32], b: &TiledColumns) -> Vec<f32> {
    let (inner, columns) = (b.inner, b.columns);
    let rows = a.len() / inner;
    let mut product = vec![0.0; rows * columns];
    let whole = rows / TILE_ROWS * TILE_ROWS;
    let (a_tiles, a_rest) = a.split_at(whole * inner);
    let (tiles, rest) = product.split_at_mut(whole * columns);
    for (a_rows, rows_out) in a_tiles
        .chunks_exact(TILE_ROWS * inner)
        .zip(tiles.chunks_exact_mut(TILE_ROWS * columns))
    {
        product_rows::<TILE_ROWS>(a_rows, b, rows_out);
    }
    for (a_row, row_out) in a_rest
        .chunks_exact(inner)
        .zip(rest.chunks_exact_mut(columns))
    {
        product_rows::<1>(a_row, b, row_out);
    }
    product
}

/// The `R` rows `out` `[R, columns]` of the product of `a` `[R, inner]` with `b`, one tile of
/// [`TILE_COLUMNS`] columns at a time.
#[inline(always)]
fn product_rows<const R: usize>(a: &[f32], b: &TiledColumns, out: &mut [f32]) {
    let inner = b.inner;
    let a_rows: [&[f32]; R] = std::array::from_fn(|r| &a[r * inner..(r + 1) * inner]);
    for (tile, b_tile) in b.values.chunks_exact(inner * TILE_COLUMNS).enumerate() {
        let mut sums = [[0.0_f32; TILE_COLUMNS]; R];
        for (k, b_row) in b_tile.chunks_exact(TILE_COLUMNS).enumerate() {
            for (sums, a_row) in sums.iter_mut().zip(a_rows) {
                let a_value = a_row[k];
                for (sum, &b_value) in sums.iter_mut().zip(b_row) {
                    *sum += a_value * b_value;
                }
            }
        }
        let first = tile * TILE_COLUMNS;
        for (sums, out_row) in sums.iter().zip(out.chunks_exact_mut(b.columns)) {
            out_row[first..first + TILE_COLUMNS].copy_from_slice(sums);
        }
    }
}

#[cfg(test)]
#[path = "matrix_product_tests.rs"]
mod tests;
