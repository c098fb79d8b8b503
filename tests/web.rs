//! Browser tests, run in headless Chromium by `scripts/test`
//! (`cargo test --target wasm32-unknown-unknown --test web`).

#![cfg(target_arch = "wasm32")]

use calibra::data::NUM_CLASSES;
use calibra::data::{parse_idx_images, parse_idx_labels, IMAGE_PIXELS};
use calibra::model::Classifier;
use calibra::page::PageState;
use calibra::web::Page;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

wasm_bindgen_test_configure!(run_in_browser);

/// The committed Fashion-MNIST test set, exactly the bytes the page fetches.
const TEST_IMAGES_GZ: &[u8] = include_bytes!("../assets/fashion-mnist/t10k-images-idx3-ubyte.gz");
const TEST_LABELS_GZ: &[u8] = include_bytes!("../assets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
/// The bundled cross-entropy network and the logits `train` recorded natively for the first
/// 64 test images (`[64, 10]` row-major).
const WEIGHTS: &[u8] = include_bytes!("../assets/models/fmnist-ce.safetensors");
const FIXTURE_LOGITS_JSON: &str = include_str!("fixtures/fmnist-ce-first64-logits.json");
const FIXTURE_IMAGES: usize = 64;
/// Largest difference allowed between a browser logit and the native one: the same f32
/// arithmetic, summed in another order by the simd128 kernels.
const LOGIT_TOLERANCE: f32 = 1e-4;
/// The reliability diagram's bar colour (Okabe–Ito blue).
const BAR_BLUE: [u8; 3] = [0, 114, 178];

/// Gzip inflation and IDX parsing work in the browser: 10,000 images, the known first labels.
#[wasm_bindgen_test]
fn parses_the_gzipped_test_set() {
    let images = parse_idx_images(TEST_IMAGES_GZ, "t10k-images-idx3-ubyte.gz")
        .expect("the committed test images parse");
    let labels = parse_idx_labels(TEST_LABELS_GZ, "t10k-labels-idx1-ubyte.gz")
        .expect("the committed test labels parse");
    assert_eq!(images.len(), 10_000);
    assert_eq!(labels.len(), 10_000);
    assert_eq!(labels[..5], [9, 2, 1, 1, 6]);
}

/// The browser's forward pass reproduces the native logits of the first 64 test images.
#[wasm_bindgen_test]
fn browser_logits_match_the_native_fixture() {
    let expected: Vec<f32> =
        serde_json::from_str(FIXTURE_LOGITS_JSON).expect("the fixture is a JSON array of numbers");
    assert_eq!(expected.len(), FIXTURE_IMAGES * NUM_CLASSES);
    let images = parse_idx_images(TEST_IMAGES_GZ, "t10k-images-idx3-ubyte.gz")
        .expect("the committed test images parse");
    let classifier =
        Classifier::from_safetensors(WEIGHTS.to_vec()).expect("the committed weights load");
    let actual = classifier
        .logits(&images.pixels()[..FIXTURE_IMAGES * IMAGE_PIXELS])
        .expect("inference runs");
    assert_eq!(actual.len(), expected.len());
    for (index, (a, e)) in actual.iter().zip(&expected).enumerate() {
        assert!(
            (a - e).abs() <= LOGIT_TOLERANCE,
            "image {}, class {}: browser logit {a}, native {e}",
            index / NUM_CLASSES,
            index % NUM_CLASSES,
        );
    }
}

/// A canvas of `width` × `height` CSS pixels with this id, in the document.
fn canvas(id: &str, width: u32, height: u32) -> HtmlCanvasElement {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .expect("a document");
    let canvas: HtmlCanvasElement = document
        .create_element("canvas")
        .expect("a canvas")
        .dyn_into()
        .expect("an HtmlCanvasElement");
    canvas.set_id(id);
    canvas
        .set_attribute(
            "style",
            &format!("display:block;width:{width}px;height:{height}px"),
        )
        .expect("styled");
    document
        .body()
        .expect("a body")
        .append_child(&canvas)
        .expect("appended");
    canvas
}
/// Pixels of `colour` in the canvas, counted separately left and right of `split_x`, below
/// `top` (under the legend strip).
fn count_colour(
    canvas: &HtmlCanvasElement,
    colour: [u8; 3],
    split_x: u32,
    top: u32,
) -> (usize, usize) {
    let context: CanvasRenderingContext2d = canvas
        .get_context("2d")
        .expect("context call")
        .expect("a 2D context")
        .dyn_into()
        .expect("a CanvasRenderingContext2d");
    let (width, height) = (canvas.width(), canvas.height());
    let pixels = context
        .get_image_data(0.0, 0.0, f64::from(width), f64::from(height))
        .expect("image data")
        .data();
    let (mut left, mut right) = (0, 0);
    for y in top..height {
        for x in 0..width {
            let i = 4 * (y * width + x) as usize;
            if pixels[i..i + 3] == colour {
                if x < split_x {
                    left += 1;
                } else {
                    right += 1;
                }
            }
        }
    }
    (left, right)
}

/// The page's own path: a Page fed with logits renders one frame, drawing the reliability
/// diagram on a real canvas (and leaving a figure said to be off screen as it is) and returning
/// the readouts. Every example is confident (logit gap
/// 8 → confidence ≈ 1) so every bar stands in the right half of the diagram and the left half,
/// where the bins are empty, has no bar.
#[wasm_bindgen_test]
fn one_render_call_draws_the_reliability_diagram_and_returns_the_readouts() {
    let rows = 200;
    let labels: Vec<u8> = (0..rows).map(|i| (i % NUM_CLASSES) as u8).collect();
    let mut logits = vec![0.0_f32; rows * NUM_CLASSES];
    for (i, row) in logits.chunks_mut(NUM_CLASSES).enumerate() {
        // Right four times out of five.
        let predicted = if i % 5 == 0 {
            (i + 1) % NUM_CLASSES
        } else {
            i % NUM_CLASSES
        };
        row[predicted] = 8.0;
    }
    let mut page = Page::new();
    let mut idx_labels = vec![0, 0, 8, 1];
    idx_labels.extend((rows as u32).to_be_bytes());
    idx_labels.extend(&labels);
    page.set_labels(&idx_labels, "labels")
        .expect("labels accepted");
    let ratio = web_sys::window().expect("a window").device_pixel_ratio();
    let reliability = canvas("reliability", 560, 500);
    canvas("histogram", 560, 180);
    let smooth = canvas("smooth-reliability", 560, 500);
    canvas("classwise", 900, 400);
    canvas("rivals-reliability", 900, 240);
    // The page's ResizeObserver reports each canvas's box; a frame reads no layout.
    for (id, width, height) in [
        ("reliability", 560.0, 500.0),
        ("histogram", 560.0, 180.0),
        ("smooth-reliability", 560.0, 500.0),
        ("classwise", 900.0, 400.0),
        ("rivals-reliability", 900.0, 240.0),
    ] {
        page.canvas_resized(id, width, height);
    }
    let next = page.read_hash("#bins=10").expect("a hash read");
    let state: PageState = serde_wasm_bindgen::from_value(field(&next, "state")).expect("a state");
    assert_eq!(
        state.bins, 10,
        "the page keeps the state the link describes"
    );
    let visible = js_sys::JSON::parse(
        r#"{"temperature": true, "conformal": false, "gallery": false,
            "figures": ["reliability", "histogram"]}"#,
    )
    .expect("an object");
    let waiting = page.render(visible.clone()).expect("renders");
    assert_eq!(
        field(&waiting, "waiting").as_bool(),
        Some(true),
        "no logits yet"
    );
    page.add_logits(0, "test", 0, &logits)
        .expect("logits accepted");
    let width_before = smooth.width();
    let readouts = page.render(visible.clone()).expect("the page draws");
    assert_eq!(field(&readouts, "waiting").as_bool(), Some(false));
    let patches: js_sys::Array = field(&readouts, "patches").dyn_into().expect("an array");
    let accuracy = patches
        .iter()
        .find(|p| field(p, "metric").as_string().as_deref() == Some("accuracy"))
        .map(|p| field(&p, "value").as_f64().expect("a number"))
        .expect("an accuracy readout");
    let (_, evaluation_rows) = calibra::data::seeded_split(rows, 0.5, 0);
    let right_rows = evaluation_rows.iter().filter(|&&i| i % 5 != 0).count();
    let expected = right_rows as f64 / evaluation_rows.len() as f64;
    assert!(
        (accuracy - expected).abs() < 1e-12,
        "accuracy {accuracy}, expected {expected}"
    );
    assert_eq!(
        reliability.width(),
        (560.0 * ratio).round() as u32,
        "sized for the pixel ratio"
    );
    let middle = reliability.width() / 2;
    let (left, right) = count_colour(&reliability, BAR_BLUE, middle, (100.0 * ratio) as u32);
    assert!(
        right > 2_000,
        "a tall blue bar on the right: {right} pixels"
    );
    assert_eq!(left, 0, "no bar where the bins are empty");
    assert_eq!(
        smooth.width(),
        width_before,
        "the smooth diagram, off screen, is not drawn"
    );
    // A control outside its range is refused with a message, not a panic, and the state kept.
    assert!(page.control("bins", "3").is_err());
    let kept = page.view_hash("none").expect("a hash");
    assert!(kept.contains("bins=10"), "the state is kept: {kept}");
}

/// Reads `key` of a JavaScript object.
fn field(object: &wasm_bindgen::JsValue, key: &str) -> wasm_bindgen::JsValue {
    js_sys::Reflect::get(object, &key.into()).expect("a field")
}
