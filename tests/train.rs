//! Integration test of `train --resume`: a two-epoch run stopped after its first epoch and
//! resumed must end with the same weights, to the bit, as the same run made in one go, a
//! resume with another recipe must be refused, and the weights are written in the shipped
//! format, which `--evaluate-only` leaves as it is. (One test: each run also evaluates the network
//! on 20,000 images, so the runs are shared.) Runs the real binary, one thread, on the first
//! 256 training images of Fashion-MNIST (Debian's `dataset-fashion-mnist`, which
//! `scripts/test` installs).

#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Training images of the short runs (two batches of 128 per epoch).
const LIMIT: &str = "256";

fn temp_dir(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("calibra-train-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).expect("create the temporary directory");
    path
}

/// Runs `train` on the short recipe with outputs in `dir`, plus `extra` arguments.
fn train(dir: &Path, extra: &[&str]) -> Output {
    let dir = dir.to_str().expect("a UTF-8 temporary path");
    Command::new(env!("CARGO_BIN_EXE_train"))
        .args([
            "--loss",
            "logitnorm",
            "--tau",
            "0.1",
            "--epochs",
            "2",
            "--limit",
            LIMIT,
        ])
        .args(["--name", "short", "--out-dir", dir, "--fixture-dir", dir])
        .args(["--checkpoint-dir", &format!("{dir}/checkpoints")])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("run train")
}

fn assert_ok(output: &Output) {
    assert!(
        output.status.success(),
        "train failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn resumed_run_equals_uninterrupted_run_and_other_recipes_are_refused() {
    let whole = temp_dir("whole");
    assert_ok(&train(&whole, &[]));

    let parts = temp_dir("parts");
    let first = train(&parts, &["--stop-after", "1"]);
    assert_ok(&first);
    assert!(
        !parts.join("short.safetensors").exists(),
        "a stopped run must not write final weights"
    );
    assert!(parts.join("checkpoints/short.ckpt.json").exists());

    // The checkpoint belongs to tau 0.1: a resume at another tau must not continue from it.
    let other = Command::new(env!("CARGO_BIN_EXE_train"))
        .args([
            "--loss",
            "logitnorm",
            "--tau",
            "0.3",
            "--epochs",
            "2",
            "--limit",
            LIMIT,
        ])
        .args(["--name", "short", "--resume"])
        .args(["--out-dir", parts.to_str().expect("UTF-8")])
        .args([
            "--checkpoint-dir",
            parts.join("checkpoints").to_str().expect("UTF-8"),
        ])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("run train");
    assert_eq!(other.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        stderr.contains("another recipe") && stderr.contains("tau 0.1"),
        "{stderr}"
    );

    let second = train(&parts, &["--resume"]);
    assert_ok(&second);
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("resuming after epoch 1"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );

    let weights = |dir: &Path| std::fs::read(dir.join("short.safetensors")).expect("weights");
    assert!(weights(&whole) == weights(&parts), "resumed weights differ");
    assert!(
        !parts.join("checkpoints/short.ckpt.json").exists(),
        "the checkpoint is removed once the weights are saved"
    );
    let card = |dir: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join("short.json")).expect("card"))
            .expect("card is JSON")
    };
    let (whole_card, parts_card) = (card(&whole), card(&parts));
    assert_eq!(whole_card["evaluation"], parts_card["evaluation"]);
    assert_eq!(
        whole_card["training"]["final_epoch_loss"],
        parts_card["training"]["final_epoch_loss"]
    );
    let norm = &whole_card["evaluation"]["test_logit_norm"];
    assert!(norm["mean"].as_f64().is_some_and(|m| m > 0.0) && norm["std"].as_f64().is_some());

    // The weights are written in the shipped format (the first dense layer in 8 bits with its
    // row scales, the rest in f16), which `--evaluate-only` leaves as it is, the card's
    // evaluation too.
    let shipped = weights(&whole);
    let header_length = u64::from_le_bytes(shipped[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&shipped[8..8 + header_length]).unwrap();
    let dtypes: std::collections::BTreeMap<&str, &str> = header
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| *name != "__metadata__")
        .map(|(name, tensor)| (name.as_str(), tensor["dtype"].as_str().unwrap()))
        .collect();
    let expected: std::collections::BTreeMap<&str, &str> = [
        ("conv1.bias", "F16"),
        ("conv1.weight", "F16"),
        ("conv2.bias", "F16"),
        ("conv2.weight", "F16"),
        ("dense1.bias", "F16"),
        ("dense1.weight", "I8"),
        ("dense1.weight_scale", "F32"),
        ("dense2.bias", "F16"),
        ("dense2.weight", "F16"),
    ]
    .into();
    assert_eq!(dtypes, expected);
    assert_ok(&train(&whole, &["--evaluate-only"]));
    assert!(
        weights(&whole) == shipped,
        "--evaluate-only changed shipped weights"
    );
    assert_eq!(card(&whole)["evaluation"], whole_card["evaluation"]);
    std::fs::remove_dir_all(&whole).ok();
    std::fs::remove_dir_all(&parts).ok();
}
