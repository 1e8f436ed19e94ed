//! The roles of a consortium and their names in certificates.
//!
//! A role is what a peer is authenticated as: the coordinator, compute node i (0, 1 or 2)
//! or party p. Its certificate carries exactly one DNS subject alternative name naming the
//! role (`coordinator.vtwin.invalid`, `node-1.vtwin.invalid`, `party-0.vtwin.invalid`;
//! `.invalid` is reserved by RFC 6761, so these names can never resolve or collide with a
//! real host), and the transport reads the peer's role from its verified certificate, never
//! from anything the peer says.

use serde::{Deserialize, Serialize};

/// Number of compute nodes (2-out-of-3 replicated sharing).
pub const NODES: u8 = 3;

/// The DNS suffix of every role name.
pub const ROLE_DOMAIN: &str = "vtwin.invalid";

/// A participant of the consortium.
///
/// `Node(i)` is meaningful for `i < 3` only ([`Role::from_dns_name`] and the configs refuse
/// others); `Party(p)` is the party's index (0-based, the order of `--parties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Role {
    /// The coordinator (drives the job, receives the opened gradient).
    Coordinator,
    /// Compute node `i`, `i < 3`.
    Node(u8),
    /// Party `p` (holds its own columns).
    Party(u16),
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Coordinator => f.write_str("coordinator"),
            Role::Node(i) => write!(f, "node {i}"),
            Role::Party(p) => write!(f, "party {p}"),
        }
    }
}

impl Role {
    /// The DNS name that a certificate for this role carries, e.g. `node-1.vtwin.invalid`.
    /// Cost: one small allocation.
    pub fn dns_name(&self) -> String {
        match self {
            Role::Coordinator => format!("coordinator.{ROLE_DOMAIN}"),
            Role::Node(i) => format!("node-{i}.{ROLE_DOMAIN}"),
            Role::Party(p) => format!("party-{p}.{ROLE_DOMAIN}"),
        }
    }

    /// The role named by a certificate DNS name, exactly as [`Role::dns_name`] writes it
    /// (ASCII, lower case, decimal index without sign or leading zeros, node index < 3,
    /// party index < 2^16); `None` for anything else. Inverse of [`Role::dns_name`] on
    /// valid roles. Cost: O(len).
    pub fn from_dns_name(name: &str) -> Option<Role> {
        let label = name.strip_suffix(ROLE_DOMAIN)?.strip_suffix('.')?;
        if label == "coordinator" {
            return Some(Role::Coordinator);
        }
        let (kind, index) = label.split_once('-')?;
        let canonical = !index.is_empty()
            && index.bytes().all(|b| b.is_ascii_digit())
            && (index == "0" || !index.starts_with('0'));
        if !canonical {
            return None;
        }
        match kind {
            "node" => index
                .parse::<u8>()
                .ok()
                .filter(|&i| i < NODES)
                .map(Role::Node),
            "party" => index.parse::<u16>().ok().map(Role::Party),
            _ => None,
        }
    }

    /// Whether this is a valid role (node index < 3). Cost: O(1).
    pub fn is_valid(&self) -> bool {
        !matches!(self, Role::Node(i) if *i >= NODES)
    }
}

/// Which client certificates a listening endpoint accepts
/// ([`crate::transport::Endpoint::bind`]): one role, or every party (a compute node takes
/// the parties' uploads without knowing how many parties a job has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Accept {
    /// Exactly this role.
    Role(Role),
    /// `Role::Party(p)` for every p.
    AnyParty,
}

impl Accept {
    /// Whether a peer authenticated as `role` is accepted. Cost: O(1).
    pub fn admits(&self, role: Role) -> bool {
        match self {
            Accept::Role(r) => *r == role,
            Accept::AnyParty => matches!(role, Role::Party(_)),
        }
    }
}

impl From<Role> for Accept {
    fn from(role: Role) -> Accept {
        Accept::Role(role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_reject_variants() {
        for role in [
            Role::Coordinator,
            Role::Node(0),
            Role::Node(2),
            Role::Party(0),
            Role::Party(17),
            Role::Party(u16::MAX),
        ] {
            assert_eq!(Role::from_dns_name(&role.dns_name()), Some(role));
        }
        for bad in [
            "node-3.vtwin.invalid",
            "node-01.vtwin.invalid",
            "node-.vtwin.invalid",
            "node-+1.vtwin.invalid",
            "party-65536.vtwin.invalid",
            "party-1.vtwin.invalid.evil",
            "*.vtwin.invalid",
            "coordinator.vtwin.invalidx",
            "coordinatorvtwin.invalid",
            "Node-1.vtwin.invalid",
            "party-1.other.invalid",
            "",
        ] {
            assert_eq!(Role::from_dns_name(bad), None, "{bad}");
        }
        assert_eq!(Role::Node(1).to_string(), "node 1");
        assert_eq!(Role::Party(0).to_string(), "party 0");
        assert_eq!(Role::Coordinator.to_string(), "coordinator");
        assert!(Accept::AnyParty.admits(Role::Party(0)));
        assert!(Accept::AnyParty.admits(Role::Party(u16::MAX)));
        assert!(!Accept::AnyParty.admits(Role::Node(0)));
        assert!(!Accept::AnyParty.admits(Role::Coordinator));
        assert!(Accept::from(Role::Node(1)).admits(Role::Node(1)));
        assert!(!Accept::from(Role::Node(1)).admits(Role::Node(0)));
        assert!(!Role::Node(3).is_valid());
    }
}
