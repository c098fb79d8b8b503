//! The blocks of readouts whose numbers cost a share of a slider frame: a frame computes one
//! only while it is on screen, as it draws only the figures on screen ([`super::figure`]); one
//! scrolling into view asks for its lab again, and one computed before every row was in is
//! computed again once they are ([`super::Readouts::complete`]), on screen or not. A block's
//! serde name is its element's id.

use serde::{Deserialize, Serialize};

use super::figure::FigureLab;
use super::{Figure, Visible};
use crate::lab::{ConformalParts, TemperatureParts};

/// A block of readouts that a frame computes only while it is on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Block {
    /// The metrics table beside the reliability diagram (its smooth ECE at the slider's T).
    TemperatureMetrics,
    /// The estimators table with its case's choice, lesson and agreement sentence.
    #[serde(rename = "estimators-block")]
    Estimators,
    BrierDecomposition,
    CorpDecomposition,
    /// The conformal lab's marginal, Mondrian and clustered thresholds side by side.
    ThresholdMethods,
    /// The conformal lab's four scores side by side.
    #[serde(rename = "comparison")]
    ScoreComparison,
}

/// What the page's script needs of a block: its element and its lab.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BlockInfo {
    pub id: Block,
    pub lab: FigureLab,
}

/// Every block, in the page's order.
pub const BLOCKS: [BlockInfo; 6] = [
    BlockInfo {
        id: Block::TemperatureMetrics,
        lab: FigureLab::Temperature,
    },
    BlockInfo {
        id: Block::Estimators,
        lab: FigureLab::Temperature,
    },
    BlockInfo {
        id: Block::BrierDecomposition,
        lab: FigureLab::Temperature,
    },
    BlockInfo {
        id: Block::CorpDecomposition,
        lab: FigureLab::Temperature,
    },
    BlockInfo {
        id: Block::ThresholdMethods,
        lab: FigureLab::Conformal,
    },
    BlockInfo {
        id: Block::ScoreComparison,
        lab: FigureLab::Conformal,
    },
];

impl Block {
    /// Its element's id.
    pub fn id(self) -> String {
        crate::text::serde_name(self)
    }
}

/// The parts of the temperature view that the blocks and figures on screen show.
pub(super) fn temperature_parts(visible: &Visible) -> TemperatureParts {
    let shows = |figure| visible.figures.contains(&figure);
    let block = |block| visible.blocks.contains(&block);
    TemperatureParts {
        smooth: block(Block::TemperatureMetrics) || shows(Figure::SmoothReliability),
        band: shows(Figure::SmoothReliability),
        estimators: block(Block::Estimators),
        cumulative: shows(Figure::CumulativeDifferences),
        corp: block(Block::CorpDecomposition) || shows(Figure::CorpReliability),
        brier: block(Block::BrierDecomposition),
    }
}

/// The parts of the conformal view that the blocks on screen show.
pub(super) fn conformal_parts(visible: &Visible) -> ConformalParts {
    ConformalParts {
        comparison: visible.blocks.contains(&Block::ScoreComparison),
        methods: visible.blocks.contains(&Block::ThresholdMethods),
    }
}
