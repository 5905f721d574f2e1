//! The delta-log family's additive checksum (DLE1 payloads, DLB1 bodies, CEP1).
//!
//! It is a plain sum of byte values modulo 2^32: no seed, no CRC, no final
//! inversion. It catches any single changed byte but not reordered bytes; the
//! format is what it is, and we must stay byte-compatible with it.

/// `sum(bytes) mod 2^32`.
pub fn simple_checksum(bytes: &[u8]) -> u32 {
    // Summing in u64 chunks first lets the compiler vectorise; the result is the
    // same as a byte-at-a-time wrapping add because 2^32 divides 2^64.
    let total: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
    total as u32
}

/// The legacy transport (§0.5) sums code points instead of bytes.
pub fn code_point_checksum(symbols: impl IntoIterator<Item = u32>) -> u32 {
    symbols.into_iter().fold(0u32, |acc, s| acc.wrapping_add(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_bytes_modulo_2_pow_32() {
        assert_eq!(simple_checksum(b""), 0);
        assert_eq!(simple_checksum(&[0xff, 0x01]), 0x100);
        let big = vec![0xffu8; (1 << 24) + 3];
        let expected = (((1u64 << 24) + 3) * 0xff) as u32;
        assert_eq!(simple_checksum(&big), expected);
    }

    #[test]
    fn code_points_wrap() {
        assert_eq!(code_point_checksum([u32::MAX, 2]), 1);
    }
}
