//! Fuzzes `vtwin_net::seal::unseal` with a fixed node key and context.
//!
//! Properties: never panics on arbitrary blobs; a blob the fuzzer did not make with the
//! key never opens (forging needs the key), except by re-sealing: the corpus is seeded
//! with one honest blob, and every input that opens must be that blob.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_net::seal::{seal, unseal, SealContext, SealKey};

const CTX: SealContext = SealContext {
    session: [7; 16],
    iteration: 3,
    party: 1,
    node: 2,
};

fn key_and_honest_blob() -> &'static (SealKey, Vec<u8>) {
    static ONCE: OnceLock<(SealKey, Vec<u8>)> = OnceLock::new();
    ONCE.get_or_init(|| {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let key = SealKey::generate(&mut rng);
        let blob = seal(&key.public(), &CTX, b"honest shares", &mut rng).expect("seal");
        (key, blob)
    })
}

fuzz_target!(|data: &[u8]| {
    let (key, honest) = key_and_honest_blob();
    if let Ok(plaintext) = unseal(key, &CTX, data) {
        assert_eq!(data, honest.as_slice(), "a forged blob opened");
        assert_eq!(&plaintext[..], b"honest shares");
    }
});
