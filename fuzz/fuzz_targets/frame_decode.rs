//! Fuzzes `vtwin_net::frame::decode` (one frame body) and the length prefix check.
//!
//! Properties: never panics; whatever decodes re-encodes to exactly the input (canonical
//! encoding) and passes the size limit. A decoded `Start` also goes through the node's
//! conversion of its public parameters (`CircuitPublic::try_from`), which must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vtwin_mpc::gradient::CircuitPublic;
use vtwin_net::frame::{body_len, decode, encode, LENGTH_PREFIX_BYTES};
use vtwin_net::Body;

fuzz_target!(|data: &[u8]| {
    if let Some(prefix) = data.get(..LENGTH_PREFIX_BYTES) {
        let _ = body_len(prefix.try_into().expect("4 bytes"));
    }
    if let Ok(frame) = decode(data) {
        let wire = encode(&frame).expect("a decoded frame re-encodes");
        assert_eq!(&wire[LENGTH_PREFIX_BYTES..], data, "non-canonical frame accepted");
        if let Body::Start { public, .. } = frame.body {
            let _ = CircuitPublic::try_from(public);
        }
    }
});
