//! The shift lab's stream: adaptive conformal inference ([`conformal::adaptive`], Gibbs & Candès
//! 2021) over the evaluation images in an order whose corruption rises, beside fixed split
//! conformal on the same stream.
//!
//! The stream is the split's evaluation half in test-set order, cut into consecutive blocks of
//! equal length (±1), one per severity whose logits are in: 0 (the clean images) and each
//! complete corrupted copy of the lab's corruption, in rising order; image `i` of block `b` is
//! seen at block `b`'s severity. While the copies are being classified the stream holds the
//! severities it has, and says so. Both methods are calibrated once, on the clean calibration
//! half at the temperature lab's fitted T, with the conformal lab's score and α (the "kept"
//! column: a deployment that never refits); ACI corrects its level after each image, the fixed
//! threshold never moves. ACI has one threshold for all classes, so the conformal lab's Mondrian
//! switch does not apply here.
//!
//! The stream's scores (a softmax and every label's score for 5,000 images, most of the work)
//! are computed once per network, split, corruption, severities in and score, and kept
//! ([`ShiftStore::scored_stream`]); moving γ or α replays ACI on them. Each replay is kept too
//! ([`ShiftStore::adaptive`]): nothing runs per frame.

use std::rc::Rc;

use super::{ConformalSettings, Lab, LabError, Part, ShiftStore, ShiftedSet};
use crate::calibration::{self, Logits};
use crate::conformal::adaptive::{adaptive_conformal, AdaptiveRun};
use crate::conformal::{self, Score};
use crate::sentences::{self, AdaptiveFigures};
use crate::shift::Corruption;

/// γ of the page's slider by default: Gibbs & Candès's choice in their experiments.
pub const DEFAULT_ACI_GAMMA: f64 = 0.005;

/// Images in the window of the windowed running coverage.
pub const COVERAGE_WINDOW: usize = 250;

/// The images of the stream seen at one severity.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamBlock {
    pub severity: u8,
    /// Steps `start..end` of the stream (from 0).
    pub start: usize,
    pub end: usize,
    /// Share covered and mean set size of ACI's sets and of the fixed sets in this block.
    pub coverage: f64,
    pub average_set_size: f64,
    pub fixed_coverage: f64,
    pub fixed_average_set_size: f64,
}

/// ACI over the rising-severity stream for one network, split, corruption, score, α and γ.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveView {
    pub corruption: Corruption,
    pub alpha: f64,
    pub gamma: f64,
    /// The clean calibration half's fitted T, at which every set is built.
    pub temperature: f64,
    /// The highest severity of the corruption: the stream is complete when every one is in.
    pub max_severity: u8,
    /// The blocks in stream order, one per severity in.
    pub blocks: Vec<StreamBlock>,
    /// The test-set row of each step.
    pub rows: Vec<usize>,
    /// The run: each step's level, set and the fixed set, and the long-run figures.
    pub run: AdaptiveRun,
    /// After each step: coverage over the last [`COVERAGE_WINDOW`] steps (fewer at the start)
    /// and since the start, of ACI's sets and of the fixed sets.
    pub window_coverage: Vec<f64>,
    pub running_coverage: Vec<f64>,
    pub fixed_window_coverage: Vec<f64>,
    pub fixed_running_coverage: Vec<f64>,
    /// The lesson, computed from the numbers.
    pub sentence: String,
}

impl AdaptiveView {
    /// The severity at which step `step` (from 0) is seen.
    pub fn severity_at(&self, step: usize) -> Option<u8> {
        self.blocks
            .iter()
            .find(|block| (block.start..block.end).contains(&step))
            .map(|block| block.severity)
    }
}

/// What a kept [`ScoredStream`] was computed from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ScoresKey {
    model: usize,
    split: u64,
    corruption: Corruption,
    severities: Vec<u8>,
    score: Score,
}

/// What a kept [`AdaptiveView`] was computed from: its stream's scores, α and γ.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StreamKey {
    scores: ScoresKey,
    alpha: f64,
    gamma: f64,
}

/// The stream with its scores at the clean T, ready to be replayed at any α and γ.
#[derive(Debug)]
pub(super) struct ScoredStream {
    classes: usize,
    /// The temperature lab's fitted T, the scores' temperature.
    temperature: f64,
    /// Each step's test row and label.
    rows: Vec<usize>,
    labels: Vec<u32>,
    /// Each block's severity and steps `start..end`.
    blocks: Vec<(u8, usize, usize)>,
    /// The clean calibration half's true-label scores.
    calibration_scores: Vec<f64>,
    /// Every label's score at each step (`[steps, K]`).
    stream_scores: Vec<f64>,
}

impl Lab {
    /// The stream of the active model's evaluation half with `corruption` rising, replayed by
    /// ACI at step `gamma` with the conformal lab's score and α from `settings` (its T and
    /// Mondrian switch aside), computed once per inputs and kept in `store`.
    ///
    /// # Errors
    /// [`LabError::NotReady`] until the active model's clean logits are complete; the conformal
    /// module's errors (a γ that is not positive and finite).
    pub fn adaptive_view(
        &mut self,
        store: &mut ShiftStore,
        corruption: Corruption,
        settings: &ConformalSettings,
        gamma: f64,
    ) -> Result<AdaptiveView, LabError> {
        let model = self.active;
        self.complete_logits(model)?.ok_or(LabError::NotReady)?;
        let severities: Vec<u8> = std::iter::once(0)
            .chain((1..=corruption.max_severity()).filter(|&level| {
                ShiftedSet::new(corruption, level)
                    .is_ok_and(|set| store.complete_logits(model, set).is_some())
            }))
            .collect();
        let key = StreamKey {
            scores: ScoresKey {
                model,
                split: self.split_seed,
                corruption,
                severities,
                score: settings.score_of(settings.score),
            },
            alpha: settings.alpha,
            gamma,
        };
        if let Some(view) = store.adaptive.get(&key) {
            return Ok(view.clone());
        }
        let scored = match store.scored_stream.get(&key.scores).cloned() {
            Some(scored) => scored,
            None => {
                let scored = Rc::new(self.scored_stream(store, &key.scores)?);
                store
                    .scored_stream
                    .keep(key.scores.clone(), Rc::clone(&scored));
                scored
            }
        };
        let view = replay(&scored, &key)?;
        store.adaptive.keep(key, view.clone());
        Ok(view)
    }

    /// Builds the stream `key` describes and scores it.
    fn scored_stream(
        &mut self,
        store: &ShiftStore,
        key: &ScoresKey,
    ) -> Result<ScoredStream, LabError> {
        let k = self.num_classes;
        let temperature = self.prepared()?.fit.temperature;
        let clean_logits = self.complete_logits(key.model)?.ok_or(LabError::NotReady)?;
        let (calibration, clean_evaluation) = self.halves(clean_logits);
        let mut evaluations = vec![clean_evaluation];
        for &severity in &key.severities[1..] {
            let set = ShiftedSet::new(key.corruption, severity).map_err(|_| LabError::NotReady)?;
            let logits = store
                .complete_logits(key.model, set)
                .ok_or(LabError::NotReady)?;
            evaluations.push(self.halves(logits).1);
        }
        // Block b of the stream is rows [b·n/B, (b+1)·n/B) of the evaluation half, taken from
        // the copy at block b's severity.
        let length = evaluations[0].labels.len();
        let levels = key.severities.len();
        let mut stream = Part::default();
        let mut blocks = Vec::with_capacity(levels);
        for (index, (&severity, evaluation)) in key.severities.iter().zip(&evaluations).enumerate()
        {
            let (start, end) = (index * length / levels, (index + 1) * length / levels);
            stream.rows.extend_from_slice(&evaluation.rows[start..end]);
            stream
                .logits
                .extend_from_slice(&evaluation.logits[start * k..end * k]);
            stream
                .labels
                .extend_from_slice(&evaluation.labels[start..end]);
            stream
                .uniforms
                .extend_from_slice(&evaluation.uniforms[start..end]);
            blocks.push((severity, start, end));
        }
        let (calibration_scores, stream_scores) =
            kept_scores(&calibration, &stream, k, temperature, &key.score)?;
        Ok(ScoredStream {
            classes: k,
            temperature,
            rows: stream.rows,
            labels: stream.labels,
            blocks,
            calibration_scores,
            stream_scores,
        })
    }
}

/// ACI and the fixed sets over `scored` at `key`'s α and γ, with the figures and the lesson.
fn replay(scored: &ScoredStream, key: &StreamKey) -> Result<AdaptiveView, LabError> {
    let run = adaptive_conformal(
        &scored.calibration_scores,
        &scored.stream_scores,
        &scored.labels,
        scored.classes,
        key.alpha,
        key.gamma,
    )?;
    let blocks: Vec<StreamBlock> = scored
        .blocks
        .iter()
        .map(|&(severity, start, end)| block(&run, severity, start, end))
        .collect();
    let adaptive: Vec<bool> = run.steps.iter().map(|s| s.covered).collect();
    let fixed: Vec<bool> = run.steps.iter().map(|s| s.fixed_covered).collect();
    let corruption = key.scores.corruption;
    let figures = AdaptiveFigures {
        corruption: corruption.label(),
        alpha: key.alpha,
        gamma: key.gamma,
        images: run.steps.len(),
        severities: key.scores.severities.clone(),
        max_severity: corruption.max_severity(),
        coverage: run.coverage,
        average_set_size: run.average_set_size,
        miscoverage_bound: run.miscoverage_bound,
        fixed_coverage: run.fixed_coverage,
        fixed_average_set_size: run.fixed_average_set_size,
        last_block: blocks.last().map(|b| {
            (
                b.coverage,
                b.average_set_size,
                b.fixed_coverage,
                b.fixed_average_set_size,
            )
        }),
    };
    Ok(AdaptiveView {
        corruption,
        alpha: key.alpha,
        gamma: key.gamma,
        temperature: scored.temperature,
        max_severity: corruption.max_severity(),
        blocks,
        rows: scored.rows.clone(),
        window_coverage: window_shares(&adaptive, COVERAGE_WINDOW),
        running_coverage: window_shares(&adaptive, adaptive.len()),
        fixed_window_coverage: window_shares(&fixed, COVERAGE_WINDOW),
        fixed_running_coverage: window_shares(&fixed, fixed.len()),
        sentence: sentences::adaptive_sentence(&figures),
        run,
    })
}

/// The true-label scores of `calibration` and every label's score of `tested` (`[rows, K]`),
/// both at `temperature`: split conformal's inputs with the clean calibration half kept.
pub(super) fn kept_scores(
    calibration: &Part,
    tested: &Part,
    k: usize,
    temperature: f64,
    score: &Score,
) -> Result<(Vec<f64>, Vec<f64>), LabError> {
    let probabilities = |part: &Part| -> Result<Vec<f64>, LabError> {
        Ok(calibration::softmax(
            &Logits::new(&part.logits, k)?,
            temperature,
        )?)
    };
    let calibration_scores = conformal::true_label_scores(
        &probabilities(calibration)?,
        &calibration.labels,
        k,
        score,
        &calibration.uniforms,
    )?;
    let tested_scores =
        conformal::all_label_scores(&probabilities(tested)?, k, score, &tested.uniforms)?;
    Ok((calibration_scores, tested_scores))
}

/// The figures of steps `start..end` of `run`, seen at `severity`.
fn block(run: &AdaptiveRun, severity: u8, start: usize, end: usize) -> StreamBlock {
    let steps = &run.steps[start..end];
    let share = |count: usize| count as f64 / steps.len().max(1) as f64;
    StreamBlock {
        severity,
        start,
        end,
        coverage: share(steps.iter().filter(|s| s.covered).count()),
        average_set_size: share(steps.iter().map(|s| s.set_size).sum()),
        fixed_coverage: share(steps.iter().filter(|s| s.fixed_covered).count()),
        fixed_average_set_size: share(steps.iter().map(|s| s.fixed_set_size).sum()),
    }
}

/// After each of `hits`, the share of hits among the last `window` (fewer at the start).
fn window_shares(hits: &[bool], window: usize) -> Vec<f64> {
    let mut inside = 0_usize;
    hits.iter()
        .enumerate()
        .map(|(step, &hit)| {
            inside += usize::from(hit);
            if step >= window {
                inside -= usize::from(hits[step - window]);
            }
            inside as f64 / (step + 1).min(window) as f64
        })
        .collect()
}

#[cfg(test)]
#[path = "adaptive_view_tests.rs"]
mod tests;
