//! A compute node's role in one iteration: its ephemeral X25519 key from
//! [`SecretRandomness::node`], the pairwise seeds with the session
//! ([`vtwin_mpc::PairSeeds::derive`]), and the sans-IO program [`iteration_node`]. A node
//! process and the in-memory driver ([`crate::memory`]) both build exactly this, so their
//! results agree bit for bit given the same keys and client messages.

use vtwin_mpc::gradient::{gradient, receive_inputs, CircuitPublic};
use vtwin_mpc::input::reveal_to;
use vtwin_mpc::{Counters, MpcError, Node, NodeId, NodeKey, PairSeeds, SessionId};

use crate::randomness::SecretRandomness;

/// Node `id`'s ephemeral key for iteration `t` (32 bytes from `randomness.node(id, t)`).
pub fn ephemeral_key(randomness: &SecretRandomness, id: NodeId, t: u64) -> NodeKey {
    NodeKey::generate(&mut randomness.node(id.index(), t))
}

/// Node `id`'s program for `session` from its own key and the three ephemeral publics (node
/// order): [`PairSeeds::derive`] then [`iteration_node`]. Errors: a public that does not
/// match `key` in slot `id`, or a degenerate key exchange ([`MpcError`]).
pub fn program(
    id: NodeId,
    key: &NodeKey,
    publics: &[[u8; 32]; 3],
    session: SessionId,
    public: CircuitPublic,
) -> Result<Node<Counters>, MpcError> {
    let seeds = PairSeeds::derive(id, key, publics, session)?;
    Ok(iteration_node(id, session, seeds, public))
}

/// Node `id`'s program for one training iteration of `session`, as a sans-IO [`Node`]
/// (not started): [`receive_inputs`] (clients 0..P-1 the parties' first inputs, no round),
/// [`gradient`] (which takes their T_p and the noise contributions of clients P..P+m-1 at its
/// `M_p` layer), and [`reveal_to`] the coordinator (client P + m,
/// [`CircuitPublic::coordinator`]); it accepts clients `0..=P+m` and returns its counters.
/// `seeds` come from [`PairSeeds::derive`] with this session.
pub fn iteration_node(
    id: NodeId,
    session: SessionId,
    seeds: PairSeeds,
    public: CircuitPublic,
) -> Node<Counters> {
    let clients = public.coordinator() + 1;
    Node::new(id, session, seeds, clients, move |ctx| async move {
        let (ups, late) = receive_inputs(&ctx, &public).await?;
        let g = gradient(&ctx, &public, &ups, late).await?;
        reveal_to(&ctx, &g, public.coordinator()).await?;
        Ok(ctx.counters())
    })
}
