//! A reader's own picture, drawn on the page or dropped onto it, made into the 28×28 image the
//! networks read, and the test images closest to it.
//!
//! Fashion-MNIST's images were made from product photos by trimming the edges close to the
//! corners' colour, resizing the longest edge to 28 pixels, sharpening, centring the result on
//! a 28×28 square and negating it, so that the garment is bright on black (Xiao et al., 2017,
//! "Fashion-MNIST", §2). [`prepare`] does the same to any picture, with two differences: it
//! resizes with an anti-aliasing filter where they skipped rows and columns (a drawing's thin
//! strokes would otherwise vanish), and it does not sharpen. In this order:
//!
//! 1. **Grey.** Each pixel's luma `g = (0.299·R + 0.587·G + 0.114·B)/255` (ITU-R BT.601, as
//!    Pillow's `convert("L")`), composited over white by its alpha: `a·g + (1 − a)`.
//! 2. **Bright on dark.** The background is the median grey of the picture's outermost ring of
//!    pixels. [`Invert::Auto`] negates the picture (`v = 1 − g`) when that background is light
//!    (above one half): a drawing in ink on paper or a product photo on white. [`Invert::On`]
//!    and [`Invert::Off`] overrule the guess.
//! 3. **Contrast.** `v ↦ clamp((v − b)/(max v − b), 0, 1)` with `b` the background after step 2,
//!    so the background is black and the brightest pixel white, as in the data set. A picture
//!    whose brightest pixel is within [`BLANK_CONTRAST`] of its background is blank: an error.
//! 4. **Trim.** The bounding box of the pixels above [`OBJECT_LEVEL`] after step 3.
//! 5. **Resize.** The box is resized so that its longest edge is 28 pixels and the other keeps
//!    the aspect ratio (rounded, at least 1), with the image crate's Lanczos-3 filter, whose
//!    support widens with the reduction so that every source pixel counts.
//! 6. **Centre.** The result is placed on a black 28×28 square at offset `⌊(28 − w)/2⌋`,
//!    `⌊(28 − h)/2⌋`, and each value stored as the byte `round(255·v)`.
//!
//! [`nearest_images`] ranks images by Euclidean distance in pixel space (bytes as numbers,
//! `√Σ(a − b)²`), lower index first on ties: the test images that look most like the reader's,
//! whose labels help the reader judge the networks' answer.

use image::{imageops, ImageBuffer, Luma};
use serde::{Deserialize, Serialize};

use crate::data::{IMAGE_PIXELS, IMAGE_SIDE};

/// The largest picture [`prepare`] takes, in pixels (a 12-megapixel photo is 12,000,000).
pub const MAX_PICTURE_PIXELS: usize = 50_000_000;
/// The longest side the page draws a dropped picture at before [`prepare`]: larger ones are
/// scaled down by the browser first, which keeps the copy into WebAssembly small.
pub const PAGE_PICTURE_SIDE: u32 = 1024;
/// Brightest minus background, in `[0, 1]` grey, below which a picture is blank.
pub const BLANK_CONTRAST: f64 = 8.0 / 255.0;
/// Level above which a pixel belongs to the object, after the contrast stretch (step 3).
pub const OBJECT_LEVEL: f32 = 0.1;
/// Test images [`nearest_images`] returns for the page.
pub const NEIGHBOURS: usize = 5;

/// Whether to negate the picture so that the object is bright on dark (step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Invert {
    /// Negate when the picture's border is light.
    Auto,
    /// Always negate.
    On,
    /// Never negate.
    Off,
}

/// What was wrong with a picture.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OwnImageError {
    #[error(
        "the picture is {width}×{height} pixels but holds {bytes} bytes, not 4 per pixel (RGBA)"
    )]
    WrongSize {
        width: usize,
        height: usize,
        bytes: usize,
    },
    #[error("the picture has no pixels ({width}×{height})")]
    Empty { width: usize, height: usize },
    #[error("the picture has {pixels} pixels, more than the {MAX_PICTURE_PIXELS} taken here")]
    TooLarge { pixels: usize },
    #[error("the picture is blank (one flat shade): draw or choose something with an outline")]
    Blank,
    #[error("images hold {bytes} bytes, not a whole number of 28×28 images")]
    RaggedImages { bytes: usize },
}

/// A picture made into the networks' input.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// `[28, 28]` row-major bytes, object bright on black.
    pub pixels: Vec<u8>,
    /// Whether the picture was negated (step 2), and by which choice.
    pub inverted: bool,
    pub choice: Invert,
}

/// One of the images closest to the reader's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Neighbour {
    /// The image's index in the set searched.
    pub index: usize,
    /// Euclidean distance in pixel space, bytes as numbers.
    pub distance: f64,
}

/// The size at which the page draws a picture of `width`×`height` before [`prepare`]: the
/// same, or scaled down so its longest side is [`PAGE_PICTURE_SIDE`] (rounded, at least 1).
pub fn page_picture_size(width: u32, height: u32) -> (u32, u32) {
    let longest = width.max(height);
    if longest <= PAGE_PICTURE_SIDE {
        return (width, height);
    }
    let scale = f64::from(PAGE_PICTURE_SIDE) / f64::from(longest);
    let side = |length: u32| ((f64::from(length) * scale).round() as u32).max(1);
    (side(width), side(height))
}

/// The 28×28 image the networks read for an RGBA picture of `width`×`height` (row-major, four
/// bytes a pixel), by the six steps of the module doc.
///
/// # Errors
/// [`OwnImageError::WrongSize`], [`OwnImageError::Empty`], [`OwnImageError::TooLarge`] for a
/// picture that is not `width`×`height` RGBA or is too large, [`OwnImageError::Blank`].
pub fn prepare(
    rgba: &[u8],
    width: usize,
    height: usize,
    invert: Invert,
) -> Result<Prepared, OwnImageError> {
    let pixels = width
        .checked_mul(height)
        .ok_or(OwnImageError::TooLarge { pixels: usize::MAX })?;
    if pixels == 0 {
        return Err(OwnImageError::Empty { width, height });
    }
    if pixels > MAX_PICTURE_PIXELS {
        return Err(OwnImageError::TooLarge { pixels });
    }
    if rgba.len() != pixels * 4 {
        return Err(OwnImageError::WrongSize {
            width,
            height,
            bytes: rgba.len(),
        });
    }
    let grey: Vec<f64> = rgba.chunks_exact(4).map(grey_over_white).collect();
    let border = median(border_values(&grey, width, height));
    let inverted = match invert {
        Invert::Auto => border > 0.5,
        Invert::On => true,
        Invert::Off => false,
    };
    let (values, background) = if inverted {
        (grey.iter().map(|g| 1.0 - g).collect(), 1.0 - border)
    } else {
        (grey, border)
    };
    let brightest = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if brightest - background < BLANK_CONTRAST {
        return Err(OwnImageError::Blank);
    }
    let span = brightest - background;
    let stretched: Vec<f32> = values
        .iter()
        .map(|v| ((v - background) / span).clamp(0.0, 1.0) as f32)
        .collect();
    let (left, top, box_width, box_height) = object_box(&stretched, width, height);
    let picture =
        ImageBuffer::<Luma<f32>, Vec<f32>>::from_raw(width as u32, height as u32, stretched)
            .ok_or(OwnImageError::WrongSize {
                width,
                height,
                bytes: rgba.len(),
            })?;
    let object = imageops::crop_imm(&picture, left, top, box_width, box_height).to_image();
    let longest = box_width.max(box_height) as f64;
    let side = |length: u32| {
        ((f64::from(length) * IMAGE_SIDE as f64 / longest).round() as u32).clamp(1, 28)
    };
    let (new_width, new_height) = (side(box_width), side(box_height));
    let resized = imageops::resize(
        &object,
        new_width,
        new_height,
        imageops::FilterType::Lanczos3,
    );
    let (offset_x, offset_y) = (
        (IMAGE_SIDE as u32 - new_width) / 2,
        (IMAGE_SIDE as u32 - new_height) / 2,
    );
    let mut out = vec![0u8; IMAGE_PIXELS];
    for (x, y, Luma([value])) in resized.enumerate_pixels() {
        let index = (y + offset_y) as usize * IMAGE_SIDE + (x + offset_x) as usize;
        out[index] = (255.0 * value.clamp(0.0, 1.0)).round() as u8;
    }
    Ok(Prepared {
        pixels: out,
        inverted,
        choice: invert,
    })
}

/// Luma of one RGBA pixel in `[0, 1]`, composited over white by its alpha (step 1).
fn grey_over_white(pixel: &[u8]) -> f64 {
    let [r, g, b, a] = [pixel[0], pixel[1], pixel[2], pixel[3]].map(f64::from);
    let luma = (0.299 * r + 0.587 * g + 0.114 * b) / 255.0;
    let alpha = a / 255.0;
    alpha * luma + (1.0 - alpha)
}

/// The values of the outermost ring of pixels (each once).
fn border_values(values: &[f64], width: usize, height: usize) -> Vec<f64> {
    (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .filter(|&(x, y)| x == 0 || y == 0 || x + 1 == width || y + 1 == height)
        .map(|(x, y)| values[y * width + x])
        .collect()
}

/// The median of `values` (not empty); the mean of the two middle ones for an even count.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// `(left, top, width, height)` of the pixels above [`OBJECT_LEVEL`] (step 4); the brightest
/// pixel is 1 after the stretch, so the box is never empty.
fn object_box(values: &[f32], width: usize, height: usize) -> (u32, u32, u32, u32) {
    let (mut left, mut top, mut right, mut bottom) = (width, height, 0, 0);
    for (index, _) in values.iter().enumerate().filter(|(_, &v)| v > OBJECT_LEVEL) {
        let (x, y) = (index % width, index / width);
        left = left.min(x);
        right = right.max(x);
        top = top.min(y);
        bottom = bottom.max(y);
    }
    if left > right {
        return (0, 0, width as u32, height as u32);
    }
    (
        left as u32,
        top as u32,
        (right - left + 1) as u32,
        (bottom - top + 1) as u32,
    )
}

/// The `count` images of `images` (`[n, 28, 28]` bytes) closest to `image` (`[28, 28]`), nearest
/// first.
///
/// # Errors
/// [`OwnImageError::RaggedImages`] when either holds a partial image.
pub fn nearest_images(
    images: &[u8],
    image: &[u8],
    count: usize,
) -> Result<Vec<Neighbour>, OwnImageError> {
    if !images.len().is_multiple_of(IMAGE_PIXELS) {
        return Err(OwnImageError::RaggedImages {
            bytes: images.len(),
        });
    }
    if image.len() != IMAGE_PIXELS {
        return Err(OwnImageError::RaggedImages { bytes: image.len() });
    }
    let mut distances: Vec<(u64, usize)> = images
        .chunks_exact(IMAGE_PIXELS)
        .map(|other| {
            other
                .iter()
                .zip(image)
                .map(|(&a, &b)| u64::from(a.abs_diff(b)).pow(2))
                .sum()
        })
        .enumerate()
        .map(|(index, squared)| (squared, index))
        .collect();
    let count = count.min(distances.len());
    if count == 0 {
        return Ok(Vec::new());
    }
    distances.select_nth_unstable(count - 1);
    distances.truncate(count);
    distances.sort_unstable();
    Ok(distances
        .into_iter()
        .map(|(squared, index)| Neighbour {
            index,
            distance: (squared as f64).sqrt(),
        })
        .collect())
}

#[cfg(test)]
#[path = "own_image_tests.rs"]
mod tests;
