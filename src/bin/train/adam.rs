//! Adam (Kingma & Ba, 2015) whose moments can be saved and restored, so that a training run
//! stopped after an epoch continues exactly where it was.
//!
//! candle-nn's `AdamW` keeps its moments private; this is the same update, written with the same
//! tensor operations in the same order (so a run gives the same bits as one with candle's
//! optimizer at weight decay 0):
//! m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g², θ ← θ − lr · (m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε).

use std::collections::HashMap;

use candle_core::{backprop::GradStore, Result, Tensor, Var};

/// Adam's hyper-parameters.
#[derive(Clone, Copy, Debug)]
pub struct AdamConfig {
    pub learning_rate: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub epsilon: f64,
}

/// One trained variable and its two moment estimates.
struct Slot {
    name: String,
    var: Var,
    first_moment: Var,
    second_moment: Var,
}

/// The optimizer: the variables it updates, by name, and the step count.
pub struct Adam {
    slots: Vec<Slot>,
    step: usize,
    config: AdamConfig,
}

/// Name prefixes of the moments in a saved state.
const FIRST_MOMENT: &str = "adam.m.";
const SECOND_MOMENT: &str = "adam.v.";

impl Adam {
    /// Starts with zero moments for each named variable (visited in name order).
    pub fn new(mut vars: Vec<(String, Var)>, config: AdamConfig) -> Result<Self> {
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        let slots = vars
            .into_iter()
            .map(|(name, var)| {
                Ok(Slot {
                    first_moment: Var::zeros(var.shape(), var.dtype(), var.device())?,
                    second_moment: Var::zeros(var.shape(), var.dtype(), var.device())?,
                    name,
                    var,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            slots,
            step: 0,
            config,
        })
    }

    /// Steps taken so far.
    pub fn step_count(&self) -> usize {
        self.step
    }

    /// Back-propagates `loss` and takes one step.
    pub fn backward_step(&mut self, loss: &Tensor) -> Result<()> {
        let grads = loss.backward()?;
        self.step(&grads)
    }

    fn step(&mut self, grads: &GradStore) -> Result<()> {
        self.step += 1;
        let AdamConfig {
            learning_rate,
            beta1,
            beta2,
            epsilon,
        } = self.config;
        let exponent = i32::try_from(self.step).unwrap_or(i32::MAX);
        let scale_m = 1.0 / (1.0 - beta1.powi(exponent));
        let scale_v = 1.0 / (1.0 - beta2.powi(exponent));
        for slot in &self.slots {
            let Some(g) = grads.get(&slot.var) else {
                continue;
            };
            let next_m = ((slot.first_moment.as_tensor() * beta1)? + (g * (1.0 - beta1))?)?;
            let next_v = ((slot.second_moment.as_tensor() * beta2)? + (g.sqr()? * (1.0 - beta2))?)?;
            let m_hat = (&next_m * scale_m)?;
            let v_hat = (&next_v * scale_v)?;
            let adjusted = (m_hat / (v_hat.sqrt()? + epsilon)?)?;
            let next_theta = (slot.var.as_tensor() - (adjusted * learning_rate)?)?;
            slot.first_moment.set(&next_m)?;
            slot.second_moment.set(&next_v)?;
            slot.var.set(&next_theta)?;
        }
        Ok(())
    }

    /// The moments, named `adam.m.<variable>` and `adam.v.<variable>`.
    pub fn moments(&self) -> HashMap<String, Tensor> {
        self.slots
            .iter()
            .flat_map(|slot| {
                [
                    (
                        format!("{FIRST_MOMENT}{}", slot.name),
                        slot.first_moment.as_tensor().clone(),
                    ),
                    (
                        format!("{SECOND_MOMENT}{}", slot.name),
                        slot.second_moment.as_tensor().clone(),
                    ),
                ]
            })
            .collect()
    }

    /// Restores the moments saved by [`Adam::moments`] and the step count.
    pub fn restore(&mut self, saved: &HashMap<String, Tensor>, step: usize) -> Result<()> {
        for slot in &self.slots {
            for (prefix, moment) in [
                (FIRST_MOMENT, &slot.first_moment),
                (SECOND_MOMENT, &slot.second_moment),
            ] {
                let key = format!("{prefix}{}", slot.name);
                let tensor = saved.get(&key).ok_or_else(|| {
                    candle_core::Error::Msg(format!("checkpoint has no tensor {key}"))
                })?;
                moment.set(tensor)?;
            }
        }
        self.step = step;
        Ok(())
    }
}
