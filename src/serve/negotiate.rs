//! Content negotiation: the `Accept` header against what a response can be.
//!
//! RFC 9110 §12.5.1: each media range has a quality (`q`, default 1); the
//! most specific range that matches a type gives its quality; `q=0` refuses
//! it. Among the acceptable types the highest quality wins, and ties go to
//! the order the server offers them in (its preference).

/// One offered type: its media type and what the caller uses it for.
pub type Offer<T> = (&'static str, T);

#[derive(Debug, PartialEq)]
struct Range<'a> {
    kind: &'a str,
    sub: &'a str,
    q: f32,
}

fn ranges(accept: &str) -> Vec<Range<'_>> {
    accept
        .split(',')
        .filter_map(|item| {
            let mut parts = item.split(';');
            let (kind, sub) = parts.next()?.trim().split_once('/')?;
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .and_then(|(_, v)| v.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            Some(Range { kind: kind.trim(), sub: sub.trim(), q: q.clamp(0.0, 1.0) })
        })
        .collect()
}

/// The quality `accept` gives `media` (`type/subtype`): that of the most
/// specific matching range, or `None` when no range matches.
fn quality(ranges: &[Range], media: &str) -> Option<f32> {
    let (kind, sub) = media.split_once('/')?;
    ranges
        .iter()
        .filter_map(|r| {
            let specificity = match (r.kind, r.sub) {
                ("*", "*") => 0,
                (k, "*") if k.eq_ignore_ascii_case(kind) => 1,
                (k, s) if k.eq_ignore_ascii_case(kind) && s.eq_ignore_ascii_case(sub) => 2,
                _ => return None,
            };
            Some((specificity, r.q))
        })
        .max_by_key(|(specificity, _)| *specificity)
        .map(|(_, q)| q)
}

/// The offer to answer with: without an `Accept` header (or an empty one),
/// the first; otherwise the acceptable one of highest quality, or `None`
/// (406 Not Acceptable).
/// The media type a `Content-Type` value names: `type/subtype`, lower-cased,
/// its parameters dropped (`""` for an empty value). Every body this server
/// reads, and every multipart part, is dispatched on this.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

pub fn choose<T: Copy>(accept: Option<&str>, offers: &[Offer<T>]) -> Option<Offer<T>> {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(accept) = accept else { return offers.first().copied() };
    let ranges = ranges(accept);
    let mut best: Option<(f32, Offer<T>)> = None;
    for offer in offers {
        if let Some(q) = quality(&ranges, offer.0).filter(|q| *q > 0.0) {
            if best.is_none_or(|(b, _)| q > b) {
                best = Some((q, *offer));
            }
        }
    }
    best.map(|(_, o)| o)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFFERS: &[Offer<u8>] =
        &[("application/sparql-results+json", 0), ("application/sparql-results+xml", 1), ("text/csv", 2)];

    fn pick(accept: Option<&str>) -> Option<u8> {
        choose(accept, OFFERS).map(|(_, t)| t)
    }

    #[test]
    fn no_accept_header_gets_the_first_offer() {
        assert_eq!(pick(None), Some(0));
        assert_eq!(pick(Some("  ")), Some(0));
    }

    #[test]
    fn quality_decides_and_ties_keep_the_server_order() {
        assert_eq!(pick(Some("text/csv, application/sparql-results+xml;q=0.9")), Some(2));
        assert_eq!(pick(Some("application/sparql-results+xml;q=0.5, text/*;q=0.8")), Some(2));
        assert_eq!(pick(Some("*/*")), Some(0));
        assert_eq!(pick(Some("text/csv, application/*")), Some(0));
    }

    #[test]
    fn the_most_specific_range_gives_the_quality() {
        // `*/*` accepts everything, but JSON itself is refused.
        assert_eq!(pick(Some("*/*, application/sparql-results+json;q=0")), Some(1));
        assert_eq!(pick(Some("application/*;q=0, text/csv;q=0.1")), Some(2));
    }

    #[test]
    fn nothing_acceptable_is_none() {
        assert_eq!(pick(Some("image/png")), None);
        assert_eq!(pick(Some("*/*;q=0")), None);
        assert_eq!(pick(Some("garbage")), None);
    }

    #[test]
    fn parameters_and_case_are_tolerated() {
        assert_eq!(pick(Some("TEXT/CSV; charset=utf-8; Q=1")), Some(2));
        assert_eq!(pick(Some("application/sparql-results+xml ; q = 0.7 ")), Some(1));
    }
}
