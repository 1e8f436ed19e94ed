//! Fuzzes the compute node's decoder of a party's sealed inputs
//! (`vtwin_consortium::upload::SealedInputsView`, read in place from an unsealed blob, which
//! holds the postcard of `SealedInputs`).
//!
//! Properties: never panics (nor allocates without bound) on arbitrary bytes; whatever
//! decodes, written again as `SealedInputs`, decodes to the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vtwin_consortium::upload::{SealedInputs, SealedInputsView};

fuzz_target!(|data: &[u8]| {
    if let Ok(view) = postcard::from_bytes::<SealedInputsView<'_>>(data) {
        let owned = SealedInputs {
            attempt: view.attempt,
            part: view.part,
            sigma: view.sigma,
            clip: view.clip,
            rows: view.rows,
            batch: view.batch,
            maps: view.maps,
            messages: view.messages.iter().map(|m| m.to_vec()).collect(),
        };
        let bytes = postcard::to_allocvec(&owned).expect("a decoded value encodes");
        let again: SealedInputsView<'_> =
            postcard::from_bytes(&bytes).expect("its encoding decodes");
        assert_eq!(
            (again.sigma.to_bits(), again.clip.to_bits()),
            (view.sigma.to_bits(), view.clip.to_bits())
        );
        assert_eq!((again.attempt, again.part), (view.attempt, view.part));
        assert_eq!(
            (again.rows, again.batch, again.maps),
            (view.rows, view.batch, view.maps)
        );
        assert_eq!(again.messages, view.messages);
    }
});
