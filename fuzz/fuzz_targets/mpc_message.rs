//! Fuzzes `vtwin_mpc::Message::decode`: the MPC messages a node decodes from its peers' `Mpc`
//! frames and from the unsealed uploads of the parties.
//!
//! Properties: never panics; whatever decodes re-encodes to exactly the input (one byte string
//! per message) and has the length its header announces.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vtwin_mpc::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::decode(data) {
        assert_eq!(m.encoded_len(), data.len(), "length differs from the header's");
        assert_eq!(m.encode(), data, "non-canonical message accepted");
    }
});
