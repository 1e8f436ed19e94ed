//! Fuzzes the compute node's decoder of a party's sealed inputs (postcard of
//! `vtwin_consortium::upload::SealedInputs`, what an unsealed blob holds).
//!
//! Properties: never panics (nor allocates without bound) on arbitrary bytes; whatever
//! decodes encodes again and decodes to the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vtwin_consortium::upload::SealedInputs;

fuzz_target!(|data: &[u8]| {
    if let Ok(inputs) = postcard::from_bytes::<SealedInputs>(data) {
        let bytes = postcard::to_allocvec(&inputs).expect("a decoded value encodes");
        let again: SealedInputs = postcard::from_bytes(&bytes).expect("its encoding decodes");
        assert_eq!(again.sigma.to_bits(), inputs.sigma.to_bits());
        assert_eq!(again.clip.to_bits(), inputs.clip.to_bits());
        assert_eq!(
            (again.rows, again.batch, again.maps),
            (inputs.rows, inputs.batch, inputs.maps)
        );
        assert_eq!(again.messages, inputs.messages);
    }
});
