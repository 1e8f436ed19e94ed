//! Which records the audit scores, and which ones fit the reference density.
//!
//! - `n = min(records, members, non-members')` records of each class, drawn uniformly
//!   without replacement (seeded), where non-members' is all non-members when an external
//!   reference set is given, else half of them: the other non-members are the reference set
//!   of the density-ratio attack, so no scored non-member is also a reference record (that
//!   would lower its density ratio and flatter the attack).
//! - Each class's sample is in random order; its first `n / 2` records form the *selection*
//!   half (choosing the epsilon test's threshold) and the rest the *evaluation* half
//!   ([`super::epsilon_bound`]). AUC and TPR at FPR use all `n`.

use rand::seq::index::sample;
use rand::Rng;

/// Rows of the members and non-members tables used by the audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSplit {
    /// Scored members (rows of the members table), selection half first.
    pub members: Vec<usize>,
    /// Scored non-members (rows of the non-members table), selection half first.
    pub non_members: Vec<usize>,
    /// Non-member rows for the reference density (empty when an external reference is used).
    pub reference: Vec<usize>,
}

/// Too few records for a split: fewer than 2 per class would be left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "too few records: {members} members and {non_members} non-members give {per_class} per class{}; at least 2 are needed",
    if *external_reference { "" } else { " (half of the non-members are the reference set)" }
)]
pub struct SplitError {
    /// Member records available.
    pub members: usize,
    /// Non-member records available.
    pub non_members: usize,
    /// Records per class the split would have.
    pub per_class: usize,
    /// Whether the reference set is a separate table (else half of the non-members).
    pub external_reference: bool,
}

impl AuditSplit {
    /// Draws the split (module documentation). Errors if fewer than 2 records per class
    /// (or 2 reference records) would be left. Cost O(non-members).
    pub fn draw<R: Rng + ?Sized>(
        members: usize,
        non_members: usize,
        records: usize,
        external_reference: bool,
        rng: &mut R,
    ) -> Result<AuditSplit, SplitError> {
        let available = if external_reference {
            non_members
        } else {
            non_members / 2
        };
        let n = records.min(members).min(available);
        if n < 2 {
            return Err(SplitError {
                members,
                non_members,
                per_class: n,
                external_reference,
            });
        }
        let m = sample(rng, members, n).into_vec();
        let all = sample(rng, non_members, non_members).into_vec();
        let reference = if external_reference {
            Vec::new()
        } else {
            all[n..].to_vec()
        };
        Ok(AuditSplit {
            members: m,
            non_members: all[..n].to_vec(),
            reference,
        })
    }

    /// Records per class.
    pub fn per_class(&self) -> usize {
        self.members.len()
    }

    /// Size of the selection half.
    pub fn selection_len(&self) -> usize {
        self.members.len() / 2
    }
}
