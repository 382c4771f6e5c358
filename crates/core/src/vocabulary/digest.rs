//! Digests as text: the one way bytes of a SHA-256 become the hex of a file name, a manifest's
//! checksum or a build id.

use sha2::{Digest, Sha256};

/// `bytes` as lowercase hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

/// The first `bytes` bytes (at most 32) of the SHA-256 of `data`, as hex: 8 bytes (16 digits)
/// name the studio's sockets, runtime files and build ids; 32 is the whole digest.
pub fn sha256_hex(data: &[u8], bytes: usize) -> String {
    hex(&Sha256::digest(data)[..bytes])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn sha256_hex_is_the_digest_s_first_bytes() {
        // SHA-256 of "abc" (FIPS 180-2's example).
        let whole = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_hex(b"abc", 32), whole);
        assert_eq!(sha256_hex(b"abc", 8), &whole[..16]);
    }
}
