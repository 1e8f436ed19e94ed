//! Fuzzes the decoders of a party's sealed inputs (postcard of
//! `vtwin_consortium::upload::SealedInputs`, what an unsealed blob holds): the owned one and
//! the compute node's in-place `SealedInputsView`.
//!
//! Properties: never panics (nor allocates without bound) on arbitrary bytes; the two
//! decoders accept the same inputs and read the same fields; whatever decodes encodes again
//! and decodes to the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vtwin_consortium::upload::{SealedInputs, SealedInputsView};

fuzz_target!(|data: &[u8]| {
    let view = postcard::from_bytes::<SealedInputsView<'_>>(data);
    let owned = postcard::from_bytes::<SealedInputs>(data);
    assert_eq!(view.is_ok(), owned.is_ok());
    if let (Ok(view), Ok(owned)) = (&view, &owned) {
        assert_eq!(view.messages.len(), owned.messages.len());
        assert!(view.messages.iter().zip(&owned.messages).all(|(a, b)| *a == b.as_slice()));
        assert_eq!(
            (view.sigma.to_bits(), view.clip.to_bits()),
            (owned.sigma.to_bits(), owned.clip.to_bits())
        );
        assert_eq!(
            (view.rows, view.batch, view.maps),
            (owned.rows, owned.batch, owned.maps)
        );
    }
    if let Ok(inputs) = owned {
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
