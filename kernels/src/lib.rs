//! calibra's inference layers as plain loops over `f32` slices: the network's input, padded;
//! each 3×3 convolution with its bias, ReLU and 2×2 max-pooling, through Winograd's
//! F(2×2, 3×3) and a matrix product per tile position; and the matrix product itself, which the
//! dense layers use too. Activations are NHWC (channels last). The network itself and its
//! weights are the `calibra` crate's (`src/model/inference.rs`), in candle.
//!
//! # Why a crate of its own
//! The loops are fast only once LLVM vectorises them (WebAssembly's `simd128`, natively SSE or
//! AVX), as the release builds, the page's among them, do. The `calibra` crate's tests and its
//! development build (which the end-to-end tests compare the page with) run the network too,
//! on tens of thousands of images, but are built for short compiles; in that profile the loops
//! stayed scalar even at `opt-level = 3`, because its debug assertions add checks to the
//! standard slice iterators the loops run on, and because split into many codegen units the
//! tile loops were not vectorised either. As a crate of its own, this code gets a development
//! profile of its own (the workspace's `Cargo.toml`: `opt-level = 3`, no debug assertions, one
//! codegen unit) while `calibra` compiles unoptimised: the tests that train or run the network
//! are several times faster for it.

mod input;
mod matrix_product;
mod winograd;

pub use input::{padded_input, padded_len, padded_values};
pub use matrix_product::{matrix_product, TiledColumns, TILE_COLUMNS};
pub use winograd::{convolve_max_pool_bias_relu, WinogradKernel};
