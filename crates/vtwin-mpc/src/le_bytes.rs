//! Ring elements as the bytes the protocols send and hash: each element's 16 little-endian
//! bytes, in order (`protocols/wire-format.md`).

use std::borrow::Cow;

/// The little-endian bytes of `words`, 16 per element. On a little-endian machine this is a
/// view of the words themselves (no copy); elsewhere a converted copy. Cost O(1) or O(n).
pub(crate) fn le_bytes(words: &[u128]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        Cow::Borrowed(bytemuck::cast_slice(words))
    } else {
        Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect())
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
        assert_eq!(le_bytes(&words).as_ref(), &want[..]);
        let mut back = words;
        bytemuck::cast_slice_mut::<u128, u8>(&mut back).copy_from_slice(&want);
        words_from_le(&mut back);
        assert_eq!(back, words);
    }
}
