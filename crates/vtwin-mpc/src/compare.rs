//! Comparison: the sign bit of a difference (twin of `vtwin_fixed::compare`), exact.

use crate::binary::{inject, sign_bit};
use crate::error::MpcError;
use crate::runtime::Ctx;
use crate::share::Shared;

/// `[x < 0]` as an arithmetic 0/1 sharing. A2B (9 rounds) + injection (1 round).
pub async fn is_negative(ctx: &Ctx, x: &Shared) -> Result<Shared, MpcError> {
    let b = sign_bit(ctx, x).await?;
    inject(ctx, &b).await
}

/// `[a < b]` as an arithmetic 0/1 sharing, exact whenever |a - b| < 2^127 (raw), i.e. for
/// any two encoded values. 10 rounds.
pub async fn less_than(ctx: &Ctx, a: &Shared, b: &Shared) -> Result<Shared, MpcError> {
    is_negative(ctx, &a.sub(b)?).await
}
