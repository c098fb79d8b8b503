//! The conformal lab's threshold methods on the page: marginal, Mondrian and clustered
//! thresholds side by side (coverage, set size, CovGap, the lowest class's coverage), CovGap's
//! noise floor with its standard deviation, the clusters found, and the sentence.

use super::readouts::{metric, text, Patch};
use crate::lab::ThresholdMethodsView;
use crate::sentences::percent;

/// Each method's row, the floor's spread, the clusters of classes in words, and the sentence.
pub(super) fn readouts(view: &ThresholdMethodsView, class_names: &[String]) -> Vec<Patch> {
    let mut patches = Vec::new();
    for (name, method) in ["marginal", "mondrian", "clustered"]
        .iter()
        .zip(&view.methods)
    {
        patches.extend([
            metric(
                format!("method_{name}_coverage"),
                method.coverage,
                percent(method.coverage, 2),
            ),
            metric(
                format!("method_{name}_average_set_size"),
                method.average_set_size,
                format!("{:.3}", method.average_set_size),
            ),
            metric(
                format!("method_{name}_covgap"),
                method.covgap,
                percent(method.covgap, 2),
            ),
            metric(
                format!("method_{name}_lowest_class"),
                method.lowest_class_coverage,
                percent(method.lowest_class_coverage, 1),
            ),
        ]);
    }
    patches.push(metric(
        "covgap_floor_spread",
        view.covgap_floor_spread,
        percent(view.covgap_floor_spread, 2),
    ));
    patches.push(text("clustered-clusters", clusters_text(view, class_names)));
    patches.push(text("threshold-methods-sentence", view.sentence.clone()));
    patches
}

/// "Cluster 1: Trouser, Bag; cluster 2: …; the rest (marginal threshold): …".
fn clusters_text(view: &ThresholdMethodsView, class_names: &[String]) -> String {
    let assignment = &view.clustered.cluster_of_class;
    let members = |cluster: Option<usize>| -> Vec<&str> {
        assignment
            .iter()
            .zip(class_names)
            .filter(|&(&c, _)| c == cluster)
            .map(|(_, name)| name.as_str())
            .collect()
    };
    let count = assignment.iter().flatten().max().map_or(0, |&m| m + 1);
    let mut parts: Vec<String> = (0..count)
        .map(|c| format!("cluster {}: {}", c + 1, members(Some(c)).join(", ")))
        .collect();
    let rest = members(None);
    if !rest.is_empty() {
        parts.push(format!(
            "in no cluster (the marginal threshold): {}",
            rest.join(", ")
        ));
    }
    let mut line = parts.join("; ");
    line[..1].make_ascii_uppercase();
    format!("{line}.")
}
