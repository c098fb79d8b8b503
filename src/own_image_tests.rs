use super::*;
use crate::data::{self, IMAGE_PIXELS};

const BLACK: [u8; 4] = [0, 0, 0, 255];
const WHITE: [u8; 4] = [255, 255, 255, 255];

/// A `width`×`height` RGBA picture of `background` with `object` over the given rectangle.
fn picture(
    width: usize,
    height: usize,
    background: [u8; 4],
    object: [u8; 4],
    (left, top, object_width, object_height): (usize, usize, usize, usize),
) -> Vec<u8> {
    let mut rgba = Vec::with_capacity(width * height * 4);
    for y in 0..height {
        for x in 0..width {
            let inside =
                (left..left + object_width).contains(&x) && (top..top + object_height).contains(&y);
            rgba.extend(if inside { object } else { background });
        }
    }
    rgba
}

/// Rows of the 28×28 that hold any non-zero pixel, and the count of 255s.
fn lit_rows_and_full(pixels: &[u8]) -> (Vec<usize>, usize) {
    let rows = (0..28)
        .filter(|&y| pixels[y * 28..(y + 1) * 28].iter().any(|&p| p > 0))
        .collect();
    (rows, pixels.iter().filter(|&&p| p == 255).count())
}

#[test]
fn grey_is_bt601_luma_over_white() {
    // 0.587 for pure green; transparent is white; half-transparent black is about half grey.
    assert!((grey_over_white(&[0, 255, 0, 255]) - 0.587).abs() < 1e-12);
    assert!((grey_over_white(&[255, 0, 0, 255]) - 0.299).abs() < 1e-12);
    assert_eq!(grey_over_white(&[0, 0, 0, 0]), 1.0);
    assert!((grey_over_white(&[0, 0, 0, 128]) - (1.0 - 128.0 / 255.0)).abs() < 1e-12);
}

#[test]
fn one_bright_pixel_fills_the_square() {
    // The object's box is 1×1: resized to 28×28, a constant stays constant.
    let rgba = picture(3, 3, BLACK, WHITE, (1, 1, 1, 1));
    let prepared = prepare(&rgba, 3, 3, Invert::Auto).unwrap();
    assert!(!prepared.inverted);
    assert_eq!(prepared.pixels, vec![255; IMAGE_PIXELS]);
}

#[test]
fn a_wide_box_keeps_its_aspect_ratio_and_is_centred() {
    // A 4×2 white box: 28×14 after resizing, at rows 7..21 (offset ⌊(28 − 14)/2⌋ = 7).
    let rgba = picture(8, 8, BLACK, WHITE, (2, 3, 4, 2));
    let prepared = prepare(&rgba, 8, 8, Invert::Auto).unwrap();
    let (rows, full) = lit_rows_and_full(&prepared.pixels);
    assert_eq!(rows, (7..21).collect::<Vec<_>>());
    assert_eq!(full, 28 * 14);
}

#[test]
fn a_three_to_one_box_rounds_its_short_side() {
    // 28·1/3 = 9.33 → 9 rows, offset ⌊(28 − 9)/2⌋ = 9.
    let rgba = picture(5, 5, BLACK, WHITE, (1, 2, 3, 1));
    let (rows, full) = lit_rows_and_full(&prepare(&rgba, 5, 5, Invert::Auto).unwrap().pixels);
    assert_eq!(rows, (9..18).collect::<Vec<_>>());
    assert_eq!(full, 28 * 9);
}

#[test]
fn ink_on_paper_is_negated_and_the_guess_can_be_overruled() {
    let bright = prepare(
        &picture(8, 8, BLACK, WHITE, (2, 3, 4, 2)),
        8,
        8,
        Invert::Auto,
    )
    .unwrap();
    let ink = picture(8, 8, WHITE, BLACK, (2, 3, 4, 2));
    let guessed = prepare(&ink, 8, 8, Invert::Auto).unwrap();
    assert!(guessed.inverted);
    assert_eq!(guessed.pixels, bright.pixels);
    assert_eq!(
        prepare(&ink, 8, 8, Invert::On).unwrap().pixels,
        guessed.pixels
    );
    // Not negated, a white page is the background and its brightest pixel: nothing stands out.
    assert_eq!(prepare(&ink, 8, 8, Invert::Off), Err(OwnImageError::Blank));
    // Ink on a transparent background reads as ink on white.
    let transparent = picture(8, 8, [0, 0, 0, 0], BLACK, (2, 3, 4, 2));
    assert_eq!(prepare(&transparent, 8, 8, Invert::Auto).unwrap(), guessed);
    assert_eq!(guessed.choice, Invert::Auto);
}

#[test]
fn the_background_is_stretched_to_black_and_the_object_to_white() {
    // Grey 0.2 background, grey 0.6 object: (0.6 − 0.2)/(0.6 − 0.2) = 1 inside, 0 outside.
    let (grey, light) = ([51, 51, 51, 255], [153, 153, 153, 255]);
    let stretched = prepare(
        &picture(8, 8, grey, light, (2, 3, 4, 2)),
        8,
        8,
        Invert::Auto,
    )
    .unwrap();
    let plain = prepare(
        &picture(8, 8, BLACK, WHITE, (2, 3, 4, 2)),
        8,
        8,
        Invert::Auto,
    )
    .unwrap();
    assert_eq!(stretched, plain);
}

#[test]
fn bad_pictures_are_refused_with_what_is_wrong() {
    assert_eq!(
        prepare(&[0; 12], 2, 2, Invert::Auto),
        Err(OwnImageError::WrongSize {
            width: 2,
            height: 2,
            bytes: 12
        })
    );
    assert_eq!(
        prepare(&[], 0, 5, Invert::Auto),
        Err(OwnImageError::Empty {
            width: 0,
            height: 5
        })
    );
    assert_eq!(
        prepare(&[], 10_000, 10_000, Invert::Auto),
        Err(OwnImageError::TooLarge {
            pixels: 100_000_000
        })
    );
    // Flat, and a difference under the blank contrast (7/255): blank.
    assert_eq!(
        prepare(
            &picture(4, 4, WHITE, WHITE, (0, 0, 1, 1)),
            4,
            4,
            Invert::Auto
        ),
        Err(OwnImageError::Blank)
    );
    let faint = picture(4, 4, BLACK, [7, 7, 7, 255], (1, 1, 2, 2));
    assert_eq!(
        prepare(&faint, 4, 4, Invert::Auto),
        Err(OwnImageError::Blank)
    );
    let visible = picture(4, 4, BLACK, [9, 9, 9, 255], (1, 1, 2, 2));
    assert!(prepare(&visible, 4, 4, Invert::Auto).is_ok());
}

#[test]
fn the_page_scales_large_pictures_to_its_longest_side() {
    assert_eq!(page_picture_size(500, 300), (500, 300));
    assert_eq!(page_picture_size(2048, 1024), (1024, 512));
    assert_eq!(page_picture_size(3000, 4000), (768, 1024));
    assert_eq!(page_picture_size(5000, 1), (1024, 1));
}

#[test]
fn nearest_images_by_hand() {
    // Three images: all 0, all 2, all 1; the query is all 1 but one pixel at 3.
    let mut images = vec![0u8; IMAGE_PIXELS];
    images.extend(vec![2u8; IMAGE_PIXELS]);
    images.extend(vec![1u8; IMAGE_PIXELS]);
    let mut query = vec![1u8; IMAGE_PIXELS];
    query[0] = 3;
    let nearest = nearest_images(&images, &query, 2).unwrap();
    // To image 2: √(2²) = 2. To images 0 and 1: √(783·1 + 9) and √(783·1 + 1).
    assert_eq!(
        nearest[0],
        Neighbour {
            index: 2,
            distance: 2.0
        }
    );
    assert_eq!(nearest[1].index, 1);
    assert!((nearest[1].distance - 784f64.sqrt()).abs() < 1e-12);
    // Ties go to the lower index.
    let twins = [vec![5u8; IMAGE_PIXELS], vec![5u8; IMAGE_PIXELS]].concat();
    let tied = nearest_images(&twins, &vec![5u8; IMAGE_PIXELS], 2).unwrap();
    assert_eq!((tied[0].index, tied[1].index), (0, 1));
    assert_eq!(
        nearest_images(&images[1..], &query, 2),
        Err(OwnImageError::RaggedImages {
            bytes: 3 * IMAGE_PIXELS - 1
        })
    );
}

#[test]
fn a_test_image_photographed_as_ink_on_paper_finds_itself() {
    // A test image that fills 28 pixels along its longest side and already sits where step 6
    // centres it comes back from a photo of itself: negated (dark on white), blown up ten times
    // and put on a wider sheet of paper, it is prepared into a 28×28 whose nearest test image is
    // itself. (Images that sit a pixel off the centre come back a pixel shifted, which pixel
    // distance punishes more than a likeness.)
    let images = data::load_images(std::path::Path::new(
        "assets/fashion-mnist/t10k-images-idx3-ubyte.gz",
    ))
    .unwrap();
    let (scale, margin) = (10, 40);
    let side = 28 * scale + 2 * margin;
    let mut checked = 0;
    for index in 0..60 {
        let original = images.image(index);
        let brightest = f32::from(*original.iter().max().unwrap());
        let values: Vec<f32> = original.iter().map(|&p| f32::from(p) / brightest).collect();
        let (left, top, width, height) = object_box(&values, 28, 28);
        let centred =
            width.max(height) == 28 && left == (28 - width) / 2 && top == (28 - height) / 2;
        if !centred {
            continue;
        }
        let mut rgba = vec![255u8; side * side * 4];
        for y in 0..28 * scale {
            for x in 0..28 * scale {
                let ink = 255 - original[(y / scale) * 28 + x / scale];
                let at = ((y + margin) * side + x + margin) * 4;
                rgba[at..at + 3].fill(ink);
            }
        }
        let prepared = prepare(&rgba, side, side, Invert::Auto).unwrap();
        assert!(prepared.inverted);
        let nearest = nearest_images(images.pixels(), &prepared.pixels, 1).unwrap();
        assert_eq!(nearest[0].index, index, "test image {index}");
        checked += 1;
    }
    assert!(
        checked >= 5,
        "only {checked} of the first 60 test images sit centred"
    );
}
