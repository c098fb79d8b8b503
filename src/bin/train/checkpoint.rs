//! Per-epoch checkpoints, so that a stopped run loses at most one epoch and `--resume` continues
//! it to the same bits as an uninterrupted run.
//!
//! A checkpoint is two files in the checkpoint folder: `<name>.ckpt.safetensors` (the weights and
//! Adam's moments) and `<name>.ckpt.json` ([`Progress`]: the recipe it belongs to, the epochs
//! done, Adam's step count, the generator's position, the current batch order and the seconds
//! spent). Each is written to a temporary file and renamed, tensors first; the JSON names the
//! epoch the tensors hold, so a run stopped between the two renames is caught on resume.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

/// Everything besides tensors that an exact resume needs.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Progress {
    /// The recipe, in words, that the checkpoint was made with; a resume with another refuses.
    pub recipe: String,
    pub epochs_done: usize,
    pub adam_steps: usize,
    /// `ChaCha8Rng::get_word_pos` after the last epoch's shuffle.
    pub rng_word_pos: u128,
    /// The training order after the last epoch (each epoch shuffles the previous one).
    pub order: Vec<usize>,
    /// Training seconds spent so far, over all resumed runs.
    pub seconds: f64,
    /// Mean loss and training accuracy of the last epoch done.
    pub last_epoch_loss: f64,
    pub last_epoch_accuracy: f64,
}

/// A checkpoint as read back: the tensors by name, and the progress.
pub type Saved = (HashMap<String, Tensor>, Progress);

/// Where one run's checkpoint lives.
pub struct Checkpoint {
    tensors: PathBuf,
    progress: PathBuf,
}

/// The name of the scalar tensor that records the epoch the tensor file holds.
const EPOCH_TENSOR: &str = "checkpoint.epochs_done";

impl Checkpoint {
    pub fn new(dir: &Path, name: &str) -> Self {
        Self {
            tensors: dir.join(format!("{name}.ckpt.safetensors")),
            progress: dir.join(format!("{name}.ckpt.json")),
        }
    }

    /// Writes the checkpoint of an epoch (tensors, then progress; each atomically).
    pub fn save(
        &self,
        mut tensors: HashMap<String, Tensor>,
        progress: &Progress,
    ) -> Result<(), String> {
        if let Some(dir) = self.tensors.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let epoch = u32::try_from(progress.epochs_done).map_err(|e| e.to_string())?;
        tensors.insert(
            EPOCH_TENSOR.to_string(),
            Tensor::new(&[epoch], &Device::Cpu).map_err(|e| e.to_string())?,
        );
        let temporary = self.tensors.with_extension("safetensors.tmp");
        candle_core::safetensors::save(&tensors, &temporary)
            .map_err(|e| format!("{}: {e}", temporary.display()))?;
        rename(&temporary, &self.tensors)?;
        let text = serde_json::to_string(progress).map_err(|e| e.to_string())?;
        let temporary = self.progress.with_extension("json.tmp");
        std::fs::write(&temporary, text).map_err(|e| format!("{}: {e}", temporary.display()))?;
        rename(&temporary, &self.progress)
    }

    /// Reads the checkpoint, or `None` when there is none yet.
    pub fn load(&self) -> Result<Option<Saved>, String> {
        if !self.progress.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&self.progress)
            .map_err(|e| format!("{}: {e}", self.progress.display()))?;
        let progress: Progress = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a checkpoint: {e}", self.progress.display()))?;
        let tensors = candle_core::safetensors::load(&self.tensors, &Device::Cpu)
            .map_err(|e| format!("{}: {e}", self.tensors.display()))?;
        let held = tensors
            .get(EPOCH_TENSOR)
            .and_then(|t| t.to_vec1::<u32>().ok())
            .and_then(|v| v.first().copied());
        if held.map(|e| e as usize) != Some(progress.epochs_done) {
            return Err(format!(
                "{}: holds epoch {held:?} but {} says {}; delete both to start over",
                self.tensors.display(),
                self.progress.display(),
                progress.epochs_done
            ));
        }
        Ok(Some((tensors, progress)))
    }

    /// Removes the checkpoint once the run has finished and its weights are saved.
    pub fn remove(&self) -> Result<(), String> {
        for path in [&self.progress, &self.tensors] {
            if path.exists() {
                std::fs::remove_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(())
    }
}

fn rename(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::rename(from, to).map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))
}
