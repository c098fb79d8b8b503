//! The page's and the README's fixed words, where a sentence once said something false: each
//! check fails on the text it replaced. (Sentences computed from numbers are tested beside the
//! code that writes them, in `sentences_tests.rs` and the e2e claims test.)

#![cfg(not(target_arch = "wasm32"))]

const PAGE: &str = include_str!("../www/index.html");
const README: &str = include_str!("../README.md");

fn assert_says(text: &str, what: &str, phrase: &str) {
    assert!(text.contains(phrase), "{what} should say: {phrase}");
}

fn assert_never_says(text: &str, what: &str, phrase: &str) {
    assert!(!text.contains(phrase), "{what} should not say: {phrase}");
}

#[test]
fn the_guarantee_names_its_condition_where_t_is_fitted() {
    assert_says(
        PAGE,
        "the conformal lab",
        "the n + 1 scores (the calibration images' and a new image's) must be exchangeable",
    );
    assert_says(
        PAGE,
        "the conformal lab",
        "A T fitted on the same half that sets q̂ breaks that exactly",
    );
    assert_says(
        PAGE,
        "the shift lab's refitted column",
        "which strictly breaks exchangeability",
    );
}

#[test]
fn an_empty_set_asserts_nothing_and_the_convention_is_named() {
    assert_never_says(PAGE, "the conformal lab", "an empty set is a miss");
    assert_never_says(
        PAGE,
        "the set sizes' caption",
        "an empty set says “none of these”",
    );
    assert_says(PAGE, "the conformal lab", "An empty set asserts nothing");
    assert_says(
        PAGE,
        "the conformal lab",
        "labels enter while the mass through them stays at or below q̂",
    );
    assert_says(
        PAGE,
        "the conformal lab",
        "by default never returns an empty set",
    );
}

#[test]
fn lac_is_smallest_only_when_calibrated() {
    assert_says(
        PAGE,
        "LAC's description",
        "the smallest sets on average <em>when the probabilities are calibrated</em>",
    );
}

#[test]
fn mondrian_bounds_each_class() {
    assert_says(PAGE, "the guarantee band's definition", "the coverage of each class y is at least 1 − α, and at most 1 − α + 1/(n<sub>y</sub> + 1) without ties");
}

#[test]
fn a_shift_is_detected_not_repaired_without_labels() {
    assert_never_says(
        PAGE,
        "the shift lab",
        "without any warning from the network",
    );
    assert_says(
        PAGE,
        "the shift lab",
        "Without labels a shift can be <em>detected</em>",
    );
    assert_says(
        PAGE,
        "the shift lab",
        "coverage cannot be <em>repaired</em>",
    );
}

#[test]
fn the_ood_metrics_and_settings_are_defined() {
    assert_says(
        PAGE,
        "AUPR-In's definition",
        "a detector that guesses already scores about 0.83",
    );
    assert_says(
        PAGE,
        "AUPR-Out's definition",
        "a detector that guesses scores about 0.17",
    );
    assert_says(
        PAGE,
        "ODIN's settings",
        "the values its authors tuned for CIFAR and DenseNet",
    );
    assert_says(
        PAGE,
        "ODIN's settings",
        "0.36) of the step between two of its 256 grey levels",
    );
}

#[test]
fn the_logitnorm_lab_states_how_the_paper_differs_and_claims_no_verdict_on_it() {
    assert_says(
        PAGE,
        "the LogitNorm lab",
        "The LogitNorm paper's protocol differs: a WRN-40-2",
    );
    assert_says(README, "the README", "not whether\n   the paper holds");
    assert_never_says(README, "the README", "with a ResNet");
    assert_never_says(README, "the README", "Its other claim holds");
    assert_never_says(README, "the README", "the paper's table 4 pitfall");
    assert_says(README, "the README", "The paper does not claim that");
    assert_says(
        README,
        "the README",
        "this one's overconfidence comes from overfitting the NLL",
    );
}

#[test]
fn intervals_say_what_they_are_not() {
    assert_says(
        PAGE,
        "the intervals' caption",
        "with 100 resamples their endpoints are rough",
    );
    assert_says(
        PAGE,
        "the intervals' caption",
        "at a T held fixed (the fitted T's own noise is not in it)",
    );
    assert_says(
        PAGE,
        "the intervals' caption",
        "ECE's and smooth ECE's intervals are no confidence intervals for the true error",
    );
    assert_says(PAGE, "the smooth diagram's caption", "relplot, the authors' library, gives larger values than this page where confidences pile up at 1");
}

#[test]
fn every_paper_link_names_its_paper() {
    for (start, _) in PAGE.match_indices("<a href=\"https://") {
        let tag = &PAGE[start..start + PAGE[start..].find('>').unwrap_or(0)];
        let paper = ["arxiv.org", "doi.org", "cseweb.ucsd.edu"]
            .iter()
            .any(|host| tag.contains(host));
        assert!(
            !paper || tag.contains(" title=\""),
            "a paper link without its title: {tag}"
        );
    }
}

#[test]
fn every_verdict_is_a_polite_live_region() {
    for (start, _) in PAGE.match_indices("class=\"verdict\"") {
        let end = start + PAGE[start..].find('>').unwrap_or(0);
        assert!(
            PAGE[start..end].contains("aria-live=\"polite\""),
            "a verdict a screen reader does not hear change: {}",
            &PAGE[start.saturating_sub(40)..end]
        );
    }
}
