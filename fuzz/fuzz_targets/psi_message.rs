//! Fuzzes `vtwin_psi::Message::decode` (every PSI message a party reads from a peer) and
//! the addressee's `Party::receive` on what decodes.
//!
//! Properties: never panics; whatever decodes re-encodes to exactly the input (one byte
//! string per message) and has the length its header announces; a party given a decoded
//! message addressed to it accepts or rejects it with a typed error, without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vtwin_psi::{BlindingKey, Message, Party, PartyKeys};

fn key(b: u8) -> BlindingKey {
    let mut s = [0u8; 32];
    s[0] = b;
    BlindingKey::from_canonical_bytes(s).expect("small non-zero scalar")
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::decode(data) {
        assert_eq!(m.encoded_len(), data.len(), "length differs from the header's");
        assert_eq!(m.encode(), data, "non-canonical message accepted");
        let ids: [&[u8]; 3] = [b"a", b"b", b"c"];
        let keys = PartyKeys { key: key(3), mask: key(5) };
        let (mut party, _) =
            Party::start(m.to, m.parties, m.session, &ids, keys).expect("valid addressing");
        let _ = party.receive(m);
    }
});
