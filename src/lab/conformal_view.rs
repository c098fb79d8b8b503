//! The conformal lab's view: thresholds, set metrics, the verdict on coverage, the four-score
//! comparison, the α sweep, the coverage experiment, the gallery and per-image explanations.

use super::intervals::BOOTSTRAP;
use super::pac_view::{self, PacExperiment};
use super::selective_view::{self, RiskControlExperiment};
use super::{Cache, GalleryInterval, Lab, LabError, Part, Probabilities, ScoreTable};
use crate::bootstrap::{self, MetricInterval};
use crate::calibration::{self, predicted_class, Logits};
use crate::conformal::clustered::{self, ClusteredThresholds};
use crate::conformal::{self, Score, ScoreKind, SetMetrics, SweepPoint, Thresholds};
use crate::sentences::{self, CoverageVerdict, ExperimentSummary, ThresholdMethodsFigures};

/// Sizes at or above this count as a "large" prediction set in the gallery.
pub const LARGE_SET_SIZE: u32 = 3;
/// Miscoverage levels of the α sweep: 0.01, 0.02, …, 0.30.
pub const SWEEP_STEPS: usize = 30;
pub const SWEEP_STEP: f64 = 0.01;
/// Points of the theoretical coverage density curves.
const DENSITY_POINTS: usize = 240;
/// Clusters of classes of the clustered thresholds beside marginal and Mondrian ones: the
/// authors' heuristic asks for more clusters than ten classes at the page's sizes (28 at
/// α = 0.1), which would leave every class in the null cluster, so the page fixes three, as
/// `calibra report --clustered 3`.
pub const CLUSTERS: usize = 3;
/// Draws of the simulation behind the standard deviation of CovGap's noise floor.
const COVGAP_FLOOR_DRAWS: usize = 400;

/// Everything the conformal lab's controls set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConformalSettings {
    /// The temperature lab's T: the sets use softmax(z / T).
    pub temperature: f64,
    pub alpha: f64,
    pub score: ScoreKind,
    /// Randomized APS, RAPS and SAPS (u ~ U(0, 1)); off: u = 1.
    pub randomized: bool,
    pub raps_lambda: f64,
    pub raps_k_reg: usize,
    pub saps_lambda: f64,
    /// Mondrian thresholds, one per class, instead of one for all.
    pub class_conditional: bool,
}

impl ConformalSettings {
    /// The score `kind` with these settings' parameters.
    pub fn score_of(&self, kind: ScoreKind) -> Score {
        kind.with(
            self.randomized,
            self.raps_lambda,
            self.raps_k_reg,
            self.saps_lambda,
        )
    }
}

/// One score's results at the current α and T, for the comparison table.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreComparison {
    pub score: ScoreKind,
    pub coverage: f64,
    pub average_set_size: f64,
    pub singleton_rate: f64,
    pub empty_rate: f64,
}

/// One way of choosing thresholds (marginal, Mondrian, clustered) at the current score, α and
/// T, on the evaluation half.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdMethod {
    pub coverage: f64,
    pub average_set_size: f64,
    pub covgap: f64,
    /// The lowest coverage of a class with evaluation images.
    pub lowest_class_coverage: f64,
}

/// What the conformal lab shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ConformalView {
    pub alpha: f64,
    pub n_calibration: usize,
    pub n_evaluation: usize,
    /// One threshold (marginal) or one per class (Mondrian); `+∞` where too few rows.
    pub qhat: Vec<f64>,
    /// Each threshold as the readout writes it ([`sentences::threshold_text`]).
    pub qhat_text: Vec<String>,
    /// The guarantee `1 − α ≤ E[coverage] ≤ upper`: `upper = 1 − α + 1/(n + 1)` for marginal
    /// thresholds, `1 − α + max_y 1/(n_y + 1)` for Mondrian ones (each class's bound, so the
    /// marginal coverage, a mix of the classes', stays below the largest).
    pub guarantee_lower: f64,
    pub guarantee_upper: f64,
    /// Standard deviation of one split's coverage (Beta-Binomial law); 0 without a finite q̂.
    pub split_standard_deviation: f64,
    /// Calibration images whose true-label score equals their q̂ (ties void the upper bound).
    pub ties_at_threshold: usize,
    pub verdict: CoverageVerdict,
    /// Which classes fall short and which overshoot, in words.
    pub per_class_sentence: String,
    /// The CovGap an exact Mondrian predictor shows on average at these class sizes
    /// ([`conformal::covgap_of_exact_mondrian`]): the noise floor CovGap is read against.
    pub covgap_floor: f64,
    pub metrics: SetMetrics,
    /// The 95% bootstrap interval of the coverage on the evaluation images (exact, see
    /// [`bootstrap::proportion_interval`]): the noise of this evaluation set alone.
    pub coverage_interval: MetricInterval,
    /// Evaluation images with each set size `0..=K`.
    pub size_counts: Vec<usize>,
    /// Coverage and set size over α (marginal thresholds) for the chosen score: the same at
    /// every α, kept with the score's table.
    pub sweep: Vec<SweepPoint>,
    /// All four scores at the current α and T. With [`ConformalParts::comparison`].
    pub comparison: Option<Vec<ScoreComparison>>,
    /// The threshold methods side by side. With [`ConformalParts::methods`].
    pub threshold_methods: Option<ThresholdMethodsView>,
}

/// What a conformal view computes beyond what the lab's first screen shows (the sets, their
/// metrics and charts, the sweep): each part costs a share of an α slider's frame, so the page
/// asks for one only while its block is on screen (`page::block`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConformalParts {
    /// All four scores at the current α and T.
    pub comparison: bool,
    /// Marginal, Mondrian and clustered thresholds with CovGap's noise floor.
    pub methods: bool,
}

impl ConformalParts {
    /// Every part.
    pub const ALL: Self = Self {
        comparison: true,
        methods: true,
    };
}

/// Marginal, Mondrian and clustered thresholds for the chosen score, whatever the Mondrian
/// switch, with CovGap's noise floor and the sentence that reads them against it.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdMethodsView {
    /// Marginal, Mondrian and clustered, in that order.
    pub methods: [ThresholdMethod; 3],
    /// What clustered conformal prediction chose ([`CLUSTERS`] clusters, seeded by the split).
    pub clustered: ClusteredThresholds,
    /// The standard deviation of an exact Mondrian method's CovGap at these class sizes
    /// ([`conformal::covgap_spread_of_exact_mondrian`]), cached per split and α.
    pub covgap_floor_spread: f64,
    pub sentence: String,
}

/// Coverage over random calibration/evaluation splits, against theory.
#[derive(Debug, Clone, PartialEq)]
pub struct CoverageExperiment {
    pub coverages: Vec<f64>,
    /// Sizes, observed mean and spread, and the theory's.
    pub summary: ExperimentSummary,
    /// `(x, density)` of `Beta(k, n + 1 − k)`.
    pub beta_density: Vec<(f64, f64)>,
    /// The caption, computed from these numbers.
    pub caption: String,
    /// The training-conditional (PAC) rank on the same splits; `None` when the calibration
    /// half is too small for one at `(α, δ)`.
    pub pac: Option<PacExperiment>,
    /// Conformal risk control at the risk level slider on the same splits; `None` when the
    /// calibration half is too small to answer anything at that level.
    pub risk_control: Option<RiskControlExperiment>,
}

/// Which evaluation images the gallery shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GalleryFilter {
    All,
    /// Sets that miss the true label.
    Misses,
    /// Sets of [`LARGE_SET_SIZE`] labels or more.
    Large,
    /// Empty sets.
    Empty,
}

/// One image of the gallery with its prediction set.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GalleryItem {
    /// Row in the test set (index of the image).
    pub row: usize,
    pub label: u32,
    pub predicted: u32,
    pub set: Vec<u32>,
    pub covered: bool,
    /// The true label's score `s(x, y)`.
    pub true_label_score: f64,
    /// The Venn–Abers interval of its top-label confidence at the lab's T (`venn_abers_view`);
    /// `None` for a calibration image, one of the rows it is fitted on.
    pub venn_abers: Option<GalleryInterval>,
}

/// Why each label of one image is in its set or not.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Explanation {
    pub row: usize,
    /// "Image #12 (evaluation half), truly a Sneaker".
    pub title: String,
    pub calibration: bool,
    pub label: u32,
    /// softmax(z / T) per label, and as the table writes it.
    pub probabilities: Vec<f64>,
    pub probability_text: Vec<String>,
    /// s(x, y) per label, and the threshold each is compared with.
    pub scores: Vec<f64>,
    pub thresholds: Vec<f64>,
    /// Each score and its threshold written with enough decimals to show which is larger.
    pub score_text: Vec<String>,
    pub threshold_text: Vec<String>,
    pub in_set: Vec<bool>,
}

/// How many of `labels` fall in each of `num_classes` classes.
fn class_counts(labels: &[u32], num_classes: usize) -> Vec<usize> {
    let mut counts = vec![0; num_classes];
    for &label in labels {
        counts[label as usize] += 1;
    }
    counts
}

/// The per-class chart's sentence, with the typical per-class spread of one split under
/// Mondrian thresholds (the mean over classes of each class's Beta-Binomial deviation).
fn per_class_sentence(
    class_names: &[String],
    per_class_coverage: &[Option<f64>],
    calibration_counts: &[usize],
    evaluation_counts: &[usize],
    alpha: f64,
    mondrian: bool,
) -> String {
    let spreads: Vec<f64> = calibration_counts
        .iter()
        .zip(evaluation_counts)
        .filter_map(|(&n, &m)| conformal::coverage_law(n, m, alpha).ok())
        .map(|law| law.split_standard_deviation)
        .collect();
    let class_sd = spreads.iter().sum::<f64>() / spreads.len().max(1) as f64;
    let names: Vec<&str> = class_names.iter().map(String::as_str).collect();
    sentences::per_class_sentence(&names, per_class_coverage, 1.0 - alpha, mondrian, class_sd)
}

/// True-label scores picked from `[n, K]` all-label scores.
pub(super) fn true_label(label_scores: &[f64], labels: &[u32], num_classes: usize) -> Vec<f64> {
    label_scores
        .chunks_exact(num_classes)
        .zip(labels)
        .map(|(row, &label)| row[label as usize])
        .collect()
}

impl Cache {
    /// Makes sure `score_tables` holds a table of each of `scores` (at most four) at
    /// `temperature`, computing the missing ones together (each row ranked once for all).
    fn score_tables(
        &mut self,
        scores: &[Score],
        temperature: f64,
        k: usize,
    ) -> Result<(), LabError> {
        if self
            .probabilities
            .as_ref()
            .is_none_or(|p| p.temperature != temperature)
        {
            self.probabilities = Some(Probabilities {
                temperature,
                calibration: calibration::softmax(
                    &Logits::new(&self.calibration.logits, k)?,
                    temperature,
                )?,
                evaluation: calibration::softmax(
                    &Logits::new(&self.evaluation.logits, k)?,
                    temperature,
                )?,
                rankings: None,
            });
            self.score_tables.clear();
        }
        let missing: Vec<Score> = scores
            .iter()
            .filter(|&score| self.score_tables.iter().all(|t| t.score != *score))
            .copied()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let probabilities = self.probabilities.as_mut().ok_or(LabError::NotReady)?;
        if probabilities.rankings.is_none() && missing.iter().any(Score::is_ranked) {
            probabilities.rankings = Some([
                conformal::Rankings::new(&probabilities.calibration, k)?,
                conformal::Rankings::new(&probabilities.evaluation, k)?,
            ]);
        }
        let [calibration_rankings, evaluation_rankings] = match &probabilities.rankings {
            Some([calibration, evaluation]) => [calibration.as_ref(), evaluation.as_ref()],
            None => [None, None],
        };
        let calibration = conformal::true_label_scores_each(
            &probabilities.calibration,
            &self.calibration.labels,
            k,
            &missing,
            &self.calibration.uniforms,
            calibration_rankings,
        )?;
        let evaluation = conformal::all_label_scores_each(
            &probabilities.evaluation,
            k,
            &missing,
            &self.evaluation.uniforms,
            evaluation_rankings,
        )?;
        for ((score, calibration), evaluation) in
            missing.into_iter().zip(calibration).zip(evaluation)
        {
            // Four kinds of score: older parameter settings make way.
            if self.score_tables.len() == 4 {
                self.score_tables.remove(0);
            }
            self.score_tables.push(ScoreTable {
                score,
                calibration,
                evaluation,
                sweep: None,
            });
        }
        Ok(())
    }

    /// Index in `score_tables` of the table of `score` at `settings`' T (computed when
    /// missing), and its thresholds at their α, marginal or Mondrian.
    fn score_thresholds(
        &mut self,
        score: Score,
        settings: &ConformalSettings,
        k: usize,
    ) -> Result<(usize, Thresholds), LabError> {
        let index = self.score_table(score, settings.temperature, k)?;
        let thresholds = thresholds(
            &self.score_tables[index],
            &self.calibration.labels,
            k,
            settings.alpha,
            settings.class_conditional,
        )?;
        Ok((index, thresholds))
    }

    /// Index in `score_tables` of the table of `score` at `temperature`, computed when missing.
    fn score_table(&mut self, score: Score, temperature: f64, k: usize) -> Result<usize, LabError> {
        self.score_tables(&[score], temperature, k)?;
        self.score_tables
            .iter()
            .position(|t| t.score == score)
            .ok_or(LabError::NotReady)
    }
}

/// All four scores at `settings`' α and T on the split's evaluation half, each with its own
/// thresholds (marginal or Mondrian as the settings say).
fn score_comparison(
    cache: &mut Cache,
    settings: &ConformalSettings,
    k: usize,
) -> Result<Vec<ScoreComparison>, LabError> {
    let every_score = ScoreKind::ALL.map(|kind| settings.score_of(kind));
    cache.score_tables(&every_score, settings.temperature, k)?;
    let mut comparison = Vec::with_capacity(4);
    for kind in ScoreKind::ALL {
        let (table, thresholds) = cache.score_thresholds(settings.score_of(kind), settings, k)?;
        let table = &cache.score_tables[table];
        let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
        let metrics = conformal::set_metrics(&sets, &cache.evaluation.labels, settings.alpha)?;
        comparison.push(ScoreComparison {
            score: kind,
            coverage: metrics.coverage,
            average_set_size: metrics.average_set_size,
            singleton_rate: metrics.singleton_rate,
            empty_rate: metrics.empty_rate,
        });
    }
    Ok(comparison)
}

impl Cache {
    /// Every label's score of row `index` of a half at the temperature of the cached
    /// probabilities (the calibration half's table keeps only its true labels' scores).
    fn row_scores(
        &self,
        score: Score,
        calibration: bool,
        index: usize,
        k: usize,
    ) -> Result<Vec<f64>, LabError> {
        let probabilities = self.probabilities.as_ref().ok_or(LabError::NotReady)?;
        let (probabilities, part) = if calibration {
            (&probabilities.calibration, &self.calibration)
        } else {
            (&probabilities.evaluation, &self.evaluation)
        };
        let mut scores = vec![0.0; k];
        conformal::label_scores(
            &probabilities[index * k..(index + 1) * k],
            &score,
            part.uniforms[index],
            &mut scores,
        )?;
        Ok(scores)
    }
}

/// Thresholds from the calibration half's scores.
fn thresholds(
    table: &ScoreTable,
    calibration_labels: &[u32],
    k: usize,
    alpha: f64,
    class_conditional: bool,
) -> Result<Thresholds, LabError> {
    thresholds_of(
        &table.calibration,
        calibration_labels,
        k,
        alpha,
        class_conditional,
    )
}

/// Thresholds from the calibration half's true-label scores.
pub(super) fn thresholds_of(
    scores: &[f64],
    calibration_labels: &[u32],
    k: usize,
    alpha: f64,
    class_conditional: bool,
) -> Result<Thresholds, LabError> {
    Ok(if class_conditional {
        Thresholds::ClassConditional(conformal::class_conditional_thresholds(
            scores,
            calibration_labels,
            k,
            alpha,
        )?)
    } else {
        Thresholds::Marginal(conformal::conformal_threshold(scores, alpha)?)
    })
}

impl Lab {
    pub(super) fn check_temperature(temperature: f64) -> Result<(), LabError> {
        if (calibration::MIN_TEMPERATURE..=calibration::MAX_TEMPERATURE).contains(&temperature) {
            Ok(())
        } else {
            Err(LabError::TemperatureOutOfRange(temperature))
        }
    }

    /// The cached halves, the score table of the settings' chosen score at their temperature,
    /// and the thresholds it gives at their α.
    pub(super) fn chosen_score(
        &mut self,
        settings: &ConformalSettings,
    ) -> Result<(&Cache, &ScoreTable, Thresholds), LabError> {
        Self::check_temperature(settings.temperature)?;
        let k = self.num_classes;
        let cache = self.prepared()?;
        let (index, thresholds) =
            cache.score_thresholds(settings.score_of(settings.score), settings, k)?;
        let cache: &Cache = cache;
        Ok((cache, &cache.score_tables[index], thresholds))
    }

    /// What the conformal lab shows for `settings`: its first screen and `parts`.
    ///
    /// # Errors
    /// [`LabError::TemperatureOutOfRange`], [`LabError::NotReady`], and the conformal module's
    /// errors for a bad α or score parameter.
    pub fn conformal_view(
        &mut self,
        settings: &ConformalSettings,
        parts: ConformalParts,
    ) -> Result<ConformalView, LabError> {
        Self::check_temperature(settings.temperature)?;
        let kept = self.prepared()?.conformal.as_ref();
        if let Some((_, _, view)) = kept.filter(|(s, p, _)| s == settings && *p == parts) {
            return Ok(view.clone());
        }
        let view = self.computed_conformal_view(settings, parts)?;
        self.prepared()?.conformal = Some((*settings, parts, view.clone()));
        Ok(view)
    }

    /// [`Lab::conformal_view`], computed.
    fn computed_conformal_view(
        &mut self,
        settings: &ConformalSettings,
        parts: ConformalParts,
    ) -> Result<ConformalView, LabError> {
        let k = self.num_classes;
        let class_names = self.class_names.clone();
        let alpha = settings.alpha;
        let seed = self.split_seed;
        conformal::quantile_rank(1, alpha)?;
        let cache = self.prepared()?;
        let comparison = if parts.comparison {
            Some(score_comparison(cache, settings, k)?)
        } else {
            None
        };
        let (chosen, thresholds) =
            cache.score_thresholds(settings.score_of(settings.score), settings, k)?;
        if cache.score_tables[chosen].sweep.is_none() {
            let alphas: Vec<f64> = (1..=SWEEP_STEPS).map(|i| i as f64 * SWEEP_STEP).collect();
            let table = &cache.score_tables[chosen];
            let sweep = conformal::alpha_sweep(
                &table.calibration,
                &table.evaluation,
                &cache.evaluation.labels,
                k,
                &alphas,
            )?;
            cache.score_tables[chosen].sweep = Some(sweep);
        }
        let covgap_floor_spread = if parts.methods {
            Some(match cache.covgap_floor_spread {
                Some((at, spread)) if at == alpha => spread,
                _ => {
                    let spread = conformal::covgap_spread_of_exact_mondrian(
                        &class_counts(&cache.calibration.labels, k),
                        &class_counts(&cache.evaluation.labels, k),
                        alpha,
                        COVGAP_FLOOR_DRAWS,
                        seed,
                    )?;
                    cache.covgap_floor_spread = Some((alpha, spread));
                    spread
                }
            })
        } else {
            None
        };
        let table = &cache.score_tables[chosen];
        let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
        let metrics = conformal::set_metrics(&sets, &cache.evaluation.labels, alpha)?;
        let mut size_counts = vec![0; k + 1];
        for &size in &sets.sizes {
            size_counts[size as usize] += 1;
        }
        let calibration_scores = &table.calibration;
        let sweep = table.sweep.clone().unwrap_or_default();
        let (n_calibration, n_evaluation) = (
            cache.calibration.labels.len(),
            cache.evaluation.labels.len(),
        );
        let calibration_labels = &cache.calibration.labels;
        let ties_at_threshold = calibration_scores
            .iter()
            .zip(calibration_labels)
            .filter(|&(&score, &y)| thresholds.for_label(y as usize) == Some(score))
            .count();
        let calibration_counts = class_counts(calibration_labels, k);
        let guarantee_upper = 1.0 - alpha
            + if settings.class_conditional {
                calibration_counts
                    .iter()
                    .filter(|&&n| n > 0)
                    .map(|&n| 1.0 / (n as f64 + 1.0))
                    .fold(0.0, f64::max)
            } else {
                1.0 / (n_calibration as f64 + 1.0)
            };
        let law = conformal::coverage_law(n_calibration, n_evaluation, alpha).ok();
        let split_standard_deviation = law.map_or(0.0, |l| l.split_standard_deviation);
        let verdict = if thresholds.values().iter().any(|q| q.is_infinite()) || law.is_none() {
            // Under Mondrian thresholds, the classes whose own q̂ is infinite.
            let values = thresholds.values();
            let infinite: Vec<&str> = if values.len() > 1 {
                values
                    .iter()
                    .zip(&class_names)
                    .filter(|(q, _)| q.is_infinite())
                    .map(|(_, name)| name.as_str())
                    .collect()
            } else {
                Vec::new()
            };
            sentences::coverage_verdict_without_threshold(metrics.coverage, &infinite)
        } else {
            sentences::coverage_verdict(
                metrics.coverage,
                1.0 - alpha,
                guarantee_upper,
                split_standard_deviation,
                ties_at_threshold,
            )
        };
        let covgap_floor = conformal::covgap_of_exact_mondrian(
            &calibration_counts,
            &class_counts(&cache.evaluation.labels, k),
            alpha,
        )?;
        let threshold_methods = match covgap_floor_spread {
            None => None,
            Some(floor_spread) => {
                let clustered = clustered::clustered_thresholds(
                    calibration_scores,
                    calibration_labels,
                    k,
                    alpha,
                    Some(CLUSTERS),
                    seed,
                )?;
                let method = |thresholds: Thresholds| -> Result<ThresholdMethod, LabError> {
                    let sets =
                        conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
                    let metrics = conformal::set_metrics(&sets, &cache.evaluation.labels, alpha)?;
                    Ok(ThresholdMethod {
                        coverage: metrics.coverage,
                        average_set_size: metrics.average_set_size,
                        covgap: metrics.covgap,
                        lowest_class_coverage: metrics
                            .per_class_coverage
                            .iter()
                            .flatten()
                            .copied()
                            .fold(f64::INFINITY, f64::min),
                    })
                };
                let methods = [
                    method(thresholds_of(
                        calibration_scores,
                        calibration_labels,
                        k,
                        alpha,
                        false,
                    )?)?,
                    method(thresholds_of(
                        calibration_scores,
                        calibration_labels,
                        k,
                        alpha,
                        true,
                    )?)?,
                    method(Thresholds::ClassConditional(
                        clustered.qhat_per_class.clone(),
                    ))?,
                ];
                let sentence = sentences::threshold_methods_sentence(&ThresholdMethodsFigures {
                    covgaps: methods.map(|m| m.covgap),
                    clusters: clustered.clusters,
                    clustered_any: clustered.cluster_of_class.iter().any(Option::is_some),
                    clustering_rows: clustered.clustering_rows,
                    floor: covgap_floor,
                    floor_spread,
                });
                Some(ThresholdMethodsView {
                    methods,
                    clustered,
                    covgap_floor_spread: floor_spread,
                    sentence,
                })
            }
        };
        let per_class_sentence = per_class_sentence(
            &class_names,
            &metrics.per_class_coverage,
            &calibration_counts,
            &class_counts(&cache.evaluation.labels, k),
            alpha,
            settings.class_conditional,
        );
        Ok(ConformalView {
            alpha,
            n_calibration,
            n_evaluation,
            qhat_text: thresholds
                .values()
                .into_iter()
                .map(sentences::threshold_text)
                .collect(),
            qhat: thresholds.values(),
            guarantee_lower: 1.0 - alpha,
            guarantee_upper,
            split_standard_deviation,
            ties_at_threshold,
            verdict,
            per_class_sentence,
            covgap_floor,
            coverage_interval: bootstrap::proportion_interval(
                metrics.covered,
                n_evaluation,
                BOOTSTRAP.level,
            )?,
            metrics,
            size_counts,
            sweep,
            comparison,
            threshold_methods,
        })
    }

    /// Draws `repetitions` random splits of the arrived rows (as many calibration rows as the
    /// current split has) and returns each evaluation coverage with the theory to compare, and
    /// on the same splits the coverage of the training-conditional threshold at `(α, pac_delta)`
    /// and the share answered wrongly under conformal risk control at `risk_level`.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`], and the experiment's errors (fewer than 2 rows);
    /// [`conformal::ConformalError::InvalidParameter`] for a δ outside (0, 1); the selective
    /// module's errors for a risk level outside (0, 1).
    pub fn coverage_experiment(
        &mut self,
        settings: &ConformalSettings,
        pac_delta: f64,
        risk_level: f64,
        repetitions: usize,
        seed: u64,
    ) -> Result<CoverageExperiment, LabError> {
        let k = self.num_classes;
        let (cache, table, _) = self.chosen_score(settings)?;
        let risk_control = selective_view::risk_control_experiment(
            cache,
            k,
            settings.temperature,
            risk_level,
            repetitions,
            seed,
        )?;
        let mut pool = table.calibration.clone();
        pool.extend(true_label(&table.evaluation, &cache.evaluation.labels, k));
        let n_calibration = cache.calibration.labels.len();
        let n_evaluation = pool.len() - n_calibration;
        let marginal_k = conformal::quantile_rank(n_calibration, settings.alpha)?;
        let pac_k = (n_calibration >= conformal::pac::minimum_pac_rows(settings.alpha, pac_delta)?)
            .then(|| conformal::pac::pac_rank(n_calibration, settings.alpha, pac_delta))
            .transpose()?;
        let ranks: Vec<usize> = std::iter::once(marginal_k).chain(pac_k).collect();
        let mut per_rank = conformal::coverage_experiment_at_ranks(
            &pool,
            n_calibration,
            &ranks,
            repetitions,
            seed,
        )?
        .into_iter();
        let coverages = per_rank.next().unwrap_or_default();
        let pac = match (pac_k, per_rank.next()) {
            (Some(pac_k), Some(pac_coverages)) => Some(pac_view::pac_experiment(
                &coverages,
                pac_coverages,
                n_calibration,
                n_evaluation,
                settings.alpha,
                pac_delta,
                (marginal_k, pac_k),
            )?),
            _ => None,
        };
        let law = conformal::coverage_law(n_calibration, n_evaluation, settings.alpha)?;
        let count = coverages.len() as f64;
        let mean = coverages.iter().sum::<f64>() / count;
        let variance =
            coverages.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (count - 1.0).max(1.0);
        let spread = 5.0 * law.split_standard_deviation;
        let (low, high) = ((law.mean - spread).max(0.0), (law.mean + spread).min(1.0));
        let beta_density = (0..=DENSITY_POINTS)
            .map(|i| {
                let x = low + (high - low) * i as f64 / DENSITY_POINTS as f64;
                conformal::coverage_beta_density(n_calibration, settings.alpha, x).map(|d| (x, d))
            })
            .collect::<Result<Vec<_>, _>>()?;
        pool.sort_by(f64::total_cmp);
        let tied_scores = pool
            .iter()
            .enumerate()
            .filter(|&(i, s)| {
                (i > 0 && pool[i - 1] == *s) || pool.get(i + 1).is_some_and(|next| next == s)
            })
            .count();
        let summary = ExperimentSummary {
            repetitions: coverages.len(),
            n_calibration,
            n_evaluation,
            k: law.k,
            mean,
            standard_deviation: variance.sqrt(),
            beta_mean: law.mean,
            beta_standard_deviation: law.beta_standard_deviation,
            finite_standard_deviation: law.split_standard_deviation,
            tied_scores,
            mondrian_ignored: settings.class_conditional,
        };
        Ok(CoverageExperiment {
            coverages,
            caption: sentences::experiment_caption(&summary),
            summary,
            beta_density,
            pac,
            risk_control,
        })
    }

    /// Up to `limit` evaluation images passing `filter`, in test-set order, with their sets
    /// and their Venn–Abers intervals.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`].
    pub fn gallery(
        &mut self,
        settings: &ConformalSettings,
        filter: GalleryFilter,
        limit: usize,
    ) -> Result<Vec<GalleryItem>, LabError> {
        let k = self.num_classes;
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let sets = conformal::sets_from_label_scores(&table.evaluation, k, &thresholds)?;
        let evaluation = &cache.evaluation;
        let items = (0..evaluation.labels.len()).filter_map(|i| {
            let label = evaluation.labels[i];
            let covered = sets.contains(i, label);
            let size = sets.sizes[i];
            let keep = match filter {
                GalleryFilter::All => true,
                GalleryFilter::Misses => !covered,
                GalleryFilter::Large => size >= LARGE_SET_SIZE,
                GalleryFilter::Empty => size == 0,
            };
            keep.then(|| {
                let item = GalleryItem {
                    row: evaluation.rows[i],
                    label,
                    predicted: predicted_class(&evaluation.logits[i * k..(i + 1) * k]) as u32,
                    set: sets.set(i).collect(),
                    covered,
                    true_label_score: table.evaluation[i * k + label as usize],
                    venn_abers: None,
                };
                (i, item)
            })
        });
        let items = items.take(limit).collect();
        self.with_venn_abers(settings.temperature, items)
    }

    /// The `count` most conformal (lowest true-label score) and least conformal (highest)
    /// calibration images, with the sets the current thresholds give them.
    ///
    /// # Errors
    /// As [`Lab::conformal_view`].
    pub fn conformity_extremes(
        &mut self,
        settings: &ConformalSettings,
        count: usize,
    ) -> Result<(Vec<GalleryItem>, Vec<GalleryItem>), LabError> {
        let k = self.num_classes;
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let calibration = &cache.calibration;
        let scores = &table.calibration;
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
        let item = |i: usize| -> Result<GalleryItem, LabError> {
            let sets = conformal::sets_from_label_scores(
                &cache.row_scores(table.score, true, i, k)?,
                k,
                &thresholds,
            )?;
            Ok(GalleryItem {
                row: calibration.rows[i],
                label: calibration.labels[i],
                predicted: predicted_class(&calibration.logits[i * k..(i + 1) * k]) as u32,
                set: sets.set(0).collect(),
                covered: sets.contains(0, calibration.labels[i]),
                true_label_score: scores[i],
                venn_abers: None,
            })
        };
        let most = order
            .iter()
            .take(count)
            .map(|&i| item(i))
            .collect::<Result<_, _>>()?;
        let least = order
            .iter()
            .rev()
            .take(count)
            .map(|&i| item(i))
            .collect::<Result<_, _>>()?;
        Ok((most, least))
    }

    /// Probabilities, per-label scores and thresholds of test image `row`.
    ///
    /// # Errors
    /// [`LabError::UnknownImage`] for a row without logits, and as [`Lab::conformal_view`].
    pub fn explain(
        &mut self,
        settings: &ConformalSettings,
        row: usize,
    ) -> Result<Explanation, LabError> {
        let k = self.num_classes;
        let names = self.class_names.clone();
        let (cache, table, thresholds) = self.chosen_score(settings)?;
        let find = |part: &Part| part.rows.binary_search(&row).ok();
        let (calibration, index) = match (find(&cache.calibration), find(&cache.evaluation)) {
            (Some(index), _) => (true, index),
            (None, Some(index)) => (false, index),
            (None, None) => return Err(LabError::UnknownImage(row)),
        };
        let part = if calibration {
            &cache.calibration
        } else {
            &cache.evaluation
        };
        let mut probabilities = vec![0.0; k];
        calibration::softmax_row(
            &part.logits[index * k..(index + 1) * k],
            settings.temperature,
            &mut probabilities,
        );
        let scores = cache.row_scores(table.score, calibration, index, k)?;
        let per_label: Vec<f64> = (0..k)
            .map(|y| thresholds.for_label(y).unwrap_or(f64::INFINITY))
            .collect();
        let (score_text, threshold_text) = scores
            .iter()
            .zip(&per_label)
            .map(|(&s, &q)| sentences::score_against_threshold(s, q))
            .unzip();
        let label = part.labels[index];
        Ok(Explanation {
            row,
            title: format!(
                "Image #{row} ({} half), truly a {}",
                if calibration {
                    "calibration"
                } else {
                    "evaluation"
                },
                names[label as usize]
            ),
            calibration,
            label,
            probability_text: probabilities
                .iter()
                .map(|&p| sentences::percent(p, 2))
                .collect(),
            probabilities,
            score_text,
            threshold_text,
            in_set: scores.iter().zip(&per_label).map(|(s, q)| s <= q).collect(),
            scores,
            thresholds: per_label,
        })
    }
}
