//! The plaintext a party seals to each node ([`SealedInputs`]): its vtwin-mpc input messages
//! for that node and the noise terms it used, so the node can check them against the
//! session's announced terms (a coordinator that told the party a smaller sigma or clip than
//! it told the nodes is caught: the AEAD authenticates the party's statement).

use serde::{Deserialize, Serialize};
use zeroize::Zeroize;

/// What is inside one sealed blob: postcard of this struct. The messages carry PRG seeds,
/// so the whole struct is zeroized on drop.
#[derive(Serialize, Deserialize)]
pub struct SealedInputs {
    /// The noise multiplier the party's noise share was drawn with.
    pub sigma: f64,
    /// The nominal clip C its noise share was scaled with.
    pub clip: f64,
    /// `Message::encode()` of each message to this node, in order.
    pub messages: Vec<Vec<u8>>,
}

impl Drop for SealedInputs {
    fn drop(&mut self) {
        self.messages.zeroize();
    }
}

impl std::fmt::Debug for SealedInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The messages hold secret seeds and shares: never printed.
        f.debug_struct("SealedInputs")
            .field("sigma", &self.sigma)
            .field("clip", &self.clip)
            .field("messages", &self.messages.len())
            .finish()
    }
}
