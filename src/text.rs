//! Words for counts in messages. Every count a person reads ("1 batch",
//! "3 batches") goes through [`plural`], so no message says "1 batches"
//! and the rule is written once.

use std::fmt::Display;

/// `n` and the noun that goes with it: `plural(1, "batch", "batches")` is
/// "1 batch", `plural(3, …)` "3 batches".
pub fn plural<N: Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let word = if is_one(&n) { one } else { many };
    format!("{n} {word}")
}

/// The noun alone, for messages that write the number elsewhere.
pub fn noun<'a, N: PartialEq + From<u8>>(n: N, one: &'a str, many: &'a str) -> &'a str {
    if is_one(&n) {
        one
    } else {
        many
    }
}

/// The rule itself: English takes the singular for one, and only for one.
fn is_one<N: PartialEq + From<u8>>(n: &N) -> bool {
    *n == N::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(plural(1usize, "batch", "batches"), "1 batch");
        assert_eq!(plural(0usize, "batch", "batches"), "0 batches");
        assert_eq!(plural(2u64, "row", "rows"), "2 rows");
        assert_eq!(plural(11u64, "row", "rows"), "11 rows");
        assert_eq!(noun(1u64, "file", "files"), "file");
        assert_eq!(noun(21u64, "file", "files"), "files");
    }
}
