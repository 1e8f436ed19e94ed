//! Ring elements as the bytes the protocols send and hash: each element's 16 little-endian
//! bytes, in order (`protocols/wire-format.md`).

/// Passes the little-endian bytes of `words`, 16 per element and in order, to `sink`: on a
/// little-endian machine in one call with a view of the words themselves (no copy),
/// elsewhere one element at a time from the stack (no heap copy of what may be secret).
/// Cost O(n).
pub(crate) fn with_le_bytes(words: &[u128], mut sink: impl FnMut(&[u8])) {
    if cfg!(target_endian = "little") {
        sink(bytemuck::cast_slice(words));
    } else {
        for w in words {
            sink(&w.to_le_bytes());
        }
    }
}

/// Reads `words`, filled with bytes in place (e.g. a keystream written over their memory),
/// as little-endian elements: a no-op on a little-endian machine. Cost O(n).
pub(crate) fn words_from_le(words: &mut [u128]) {
    for w in words {
        *w = u128::from_le(*w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_each_elements_little_endian_bytes_in_order() {
        let words = [
            1u128,
            u128::MAX - 1,
            0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
        ];
        let want: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut got = Vec::new();
        with_le_bytes(&words, |b| got.extend_from_slice(b));
        assert_eq!(got, want);
        let mut back = words;
        bytemuck::cast_slice_mut::<u128, u8>(&mut back).copy_from_slice(&want);
        words_from_le(&mut back);
        assert_eq!(back, words);
    }
}
