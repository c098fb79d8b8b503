//! The LogitNorm paper's protocol on these networks, beside the lab's own settings: MSP at
//! `T = 1` and energy at `T = 0.1` for the LogitNorm networks (at `T = 1` for cross-entropy),
//! as Wei et al. (ICML 2022) score them, and τ chosen as they tune it, on Gaussian noise (the
//! trained τ whose MSP lets the fewest Gaussian-noise images through at a 95% true-positive
//! rate), then evaluated on the MNIST digits and on uniform noise. It asks for every trained
//! network's logits on the three sets only while the reader has it open.

use super::ood::Job;
use super::readouts::{metric_cell, text, Patch, TableCell, TableRow};
use super::state::{Network, PageState};
use crate::lab::ood_view::ScoreKind as OodScore;
use crate::lab::{Lab, LabError, OodSet, OodStore};
use crate::sentences::{self, percent};
use crate::text::serde_name;

/// The temperature of MSP in the paper's protocol.
const MSP_TEMPERATURE: f64 = 1.0;
/// The temperature of the energy score for a LogitNorm network in the paper's protocol.
const LOGITNORM_ENERGY_TEMPERATURE: f64 = 0.1;
/// The sets the chosen τ is evaluated on.
const EVALUATION_SETS: [OodSet; 2] = [OodSet::Mnist, OodSet::Uniform];

/// The τ the paper's tuning picks: the lowest FPR95 on Gaussian noise, the smaller τ on a tie;
/// `None` without a candidate.
pub fn choose_tau(gaussian_fpr95: &[(f64, f64)]) -> Option<f64> {
    gaussian_fpr95
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.total_cmp(&b.0)))
        .map(|(tau, _)| tau)
}

/// The paper protocol's part of a frame: its patches, and the logits it still needs.
#[derive(Debug, Default)]
pub struct PaperOutput {
    pub patches: Vec<Patch>,
    pub needs: Vec<Job>,
}

/// The energy score's temperature for `network` under the paper's protocol.
fn energy_temperature(network: Network) -> f64 {
    match network {
        Network::Ce => MSP_TEMPERATURE,
        _ => LOGITNORM_ENERGY_TEMPERATURE,
    }
}

/// `model`'s FPR95 and AUROC by `kind` at `temperature` on `set`, once its logits are in.
fn metrics(
    lab: &Lab,
    store: &mut OodStore,
    model: usize,
    set: OodSet,
    kind: OodScore,
    temperature: f64,
) -> Result<Option<(f64, f64)>, LabError> {
    let Some(logits) = lab.complete_logits(model)? else {
        return Ok(None);
    };
    let (arrived, rows) = store.logits_progress(model, set);
    if arrived < rows {
        return Ok(None);
    }
    let view = store.view(model, set, temperature, logits, lab.split_seed())?;
    Ok(view
        .summary(kind)
        .ok()
        .map(|s| (s.metrics.fpr95, s.metrics.auroc)))
}

/// The protocol's readouts when the reader has it open (`state.paper`); nothing otherwise.
pub(super) fn render(
    lab: &Lab,
    store: &mut OodStore,
    state: &PageState,
) -> Result<PaperOutput, LabError> {
    let mut out = PaperOutput::default();
    out.patches.push(Patch::Hidden {
        id: "paper-block",
        hidden: !state.paper,
    });
    if !state.paper {
        return Ok(out);
    }
    let networks = Network::trained();
    for &network in &networks {
        let Some(model) = network.index() else {
            continue;
        };
        if lab.arrived(model)? < lab.rows() {
            out.needs.push(Job {
                model,
                set: crate::lab::ImageSet::Test,
            });
        }
        for set in [OodSet::Gaussian, OodSet::Mnist, OodSet::Uniform] {
            let (arrived, rows) = store.logits_progress(model, set);
            if arrived < rows {
                out.needs.push(Job {
                    model,
                    set: set.into(),
                });
            }
        }
    }
    // τ as the paper tunes it, once every LogitNorm network is scored on Gaussian noise.
    let mut gaussian = Vec::new();
    for &network in &networks {
        if let (Some(tau), Some(model)) = (network.tau(), network.index()) {
            if let Some((fpr95, _)) = metrics(
                lab,
                store,
                model,
                OodSet::Gaussian,
                OodScore::Msp,
                MSP_TEMPERATURE,
            )? {
                gaussian.push((tau, fpr95));
            }
        }
    }
    let candidates = networks.iter().filter(|n| n.tau().is_some()).count();
    if gaussian.len() < candidates {
        out.patches.push(text(
            "paper-selection",
            format!(
                "Scoring every LogitNorm network on Gaussian noise to choose τ as the paper \
                 does ({} of {candidates})…",
                gaussian.len()
            ),
        ));
        out.patches.push(Patch::Rows {
            id: "paper-metrics",
            rows: Vec::new(),
        });
        return Ok(out);
    }
    let Some(chosen_tau) = choose_tau(&gaussian) else {
        return Ok(out);
    };
    let chosen = networks
        .iter()
        .copied()
        .find(|n| n.tau() == Some(chosen_tau))
        .unwrap_or(Network::Ce);
    out.patches.push(text(
        "paper-selection",
        sentences::paper_selection(chosen_tau, &gaussian),
    ));
    let mut rows = Vec::new();
    let mut figures = Vec::new();
    for set in EVALUATION_SETS {
        for (kind, name) in [(OodScore::Msp, "msp"), (OodScore::Energy, "energy")] {
            let mut cells = vec![TableCell {
                text: format!(
                    "{}, {}",
                    set.title(),
                    if kind == OodScore::Msp {
                        "MSP at T = 1".to_string()
                    } else {
                        "energy at T = 0.1 (LogitNorm), 1 (cross-entropy)".to_string()
                    }
                ),
                metric: None,
                value: None,
            }];
            let mut pair = Vec::new();
            for (network, suffix) in [(chosen, ""), (Network::Ce, "_ce")] {
                let temperature = match kind {
                    OodScore::Msp => MSP_TEMPERATURE,
                    _ => energy_temperature(network),
                };
                let Some(model) = network.index() else {
                    continue;
                };
                let found = metrics(lab, store, model, set, kind, temperature)?;
                let set_key = serde_name(set);
                for (metric, value) in
                    [("fpr95", found.map(|m| m.0)), ("auroc", found.map(|m| m.1))]
                {
                    let shown = value.map_or_else(
                        || "…".to_string(),
                        |v| {
                            if metric == "fpr95" {
                                percent(v, 1)
                            } else {
                                format!("{v:.3}")
                            }
                        },
                    );
                    cells.push(metric_cell(
                        format!("paper_{metric}_{name}_{set_key}{suffix}"),
                        value,
                        shown,
                    ));
                }
                pair.push(found);
            }
            if let [Some(a), Some(b)] = pair[..] {
                figures.push(sentences::PaperFigures {
                    set: set.title(),
                    score: if kind == OodScore::Msp {
                        "MSP"
                    } else {
                        "energy"
                    },
                    chosen_fpr95: a.0,
                    cross_entropy_fpr95: b.0,
                });
            }
            rows.push(TableRow {
                current: false,
                cells,
            });
        }
    }
    out.patches.push(Patch::Rows {
        id: "paper-metrics",
        rows,
    });
    out.patches
        .push(text("paper-network-title", chosen.title()));
    out.patches.push(text(
        "paper-lesson",
        sentences::paper_lesson(&chosen.title(), &figures),
    ));
    Ok(out)
}

#[cfg(test)]
#[path = "paper_protocol_tests.rs"]
mod tests;
