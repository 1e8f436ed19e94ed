//! The in-memory driver of one iteration: the three compute nodes' programs
//! ([`crate::node::program`]) run by the vtwin-mpc simulator on the parties' messages, and the
//! coordinator's opening ([`crate::coordinator::open`]). The `mpc` backend and the tests run
//! the iteration this way; a consortium runs the same roles in separate processes.

use vtwin_mpc::gradient::CircuitPublic;
use vtwin_mpc::sim::run_nodes;
use vtwin_mpc::{Counters, Delivery, Message, MpcError, NodeId, NodeKey, SessionId};

use crate::coordinator::open;
use crate::node::{ephemeral_key, program};
use crate::randomness::SecretRandomness;

/// The result of one in-memory iteration.
#[derive(Clone, Debug)]
pub struct Iteration {
    /// G + Z as opened by the coordinator, canonical order, raw ring elements.
    pub opened: Vec<u128>,
    /// The three nodes' counters (inputs, circuit and reveal).
    pub counters: [Counters; 3],
    /// Bytes the clients (parties' data and noise inputs) uploaded.
    pub client_bytes: u64,
}

/// The three nodes' ephemeral keys of iteration `t` ([`ephemeral_key`]).
pub fn node_keys(randomness: &SecretRandomness, t: u64) -> [NodeKey; 3] {
    NodeId::ALL.map(|id| ephemeral_key(randomness, id, t))
}

/// Runs the iteration of `session`: the three nodes with `keys` (node order) evaluate the
/// circuit of `public` on the parties' `messages` (any order; each addressed to a node),
/// delivered in `delivery` order, and the coordinator opens G + Z. Errors: the first node or
/// opening error ([`MpcError`]). Cost: the circuit (`protocols/mpc-gradient.md`) plus one
/// encode/decode per message.
pub fn run(
    session: SessionId,
    public: &CircuitPublic,
    keys: &[NodeKey; 3],
    messages: impl IntoIterator<Item = Message>,
    delivery: Delivery,
) -> Result<Iteration, MpcError> {
    let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
    let [n0, n1, n2] = NodeId::ALL;
    let nodes = [
        program(n0, &keys[0], &publics, session, public.clone())?,
        program(n1, &keys[1], &publics, session, public.clone())?,
        program(n2, &keys[2], &publics, session, public.clone())?,
    ];
    let rep = run_nodes(nodes, messages, delivery)?;
    Ok(Iteration {
        opened: open(session, public, rep.to_clients)?,
        counters: rep.counters,
        client_bytes: rep.client_bytes,
    })
}
