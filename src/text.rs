//! How the page, its sentences and the CLI write a count or a choice as text: below every
//! floor that writes text, so that none of them imports another for a helper.

use serde::Serialize;
use serde_json::Value;

/// `10000` as "10,000".
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `value` to `places` decimals, without the minus sign of a value that rounds to 0 (a term
/// that is 0 in exact arithmetic may come out of its sums a rounding error below 0).
pub fn fixed(value: f64, places: usize) -> String {
    let text = format!("{value:.places$}");
    match text.strip_prefix('-') {
        Some(magnitude) if magnitude.bytes().all(|b| b == b'0' || b == b'.') => {
            magnitude.to_string()
        }
        _ => text,
    }
}

/// How `value` is written in the hash and in `data-metric` names: its serde name for a choice
/// (an enum variant), its JSON text otherwise.
pub fn serde_name(value: impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped_by_commas() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (10_000, "10,000"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(grouped(n), text);
        }
    }

    #[test]
    fn a_value_that_rounds_to_0_has_no_minus_sign() {
        assert_eq!(fixed(-1e-17, 4), "0.0000");
        assert_eq!(fixed(-0.00004, 4), "0.0000");
        assert_eq!(fixed(-0.00005001, 4), "-0.0001");
        assert_eq!(fixed(0.12345, 2), "0.12");
        assert_eq!(fixed(-2.5, 1), "-2.5");
    }
}
