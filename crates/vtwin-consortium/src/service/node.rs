//! `vtwin node`: a compute node serving sessions over QUIC ([`NodeServer`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::config::NodePolicy;
use tokio::sync::{oneshot, Notify};
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_mpc::NodeId;
use vtwin_net::pki::Identity;
use vtwin_net::transport::{Backoff, Endpoint, TransportOptions};
use vtwin_net::{Accept, Role, SealKey};

use super::mesh::{Event, Hub, Inbound, Mesh};
use super::{ServiceError, StopCause};
use crate::error::LinkLoss;
use crate::node::{NodeOutput, NodeSession};
use vtwin_host::error_chain::Chain;

/// What a node needs besides its endpoint.
pub struct NodeRun {
    /// The three nodes' addresses, by id (this node dials the higher ids).
    pub nodes: [SocketAddr; 3],
    /// The node's long-term seal key.
    pub seal_key: SealKey,
    /// The noise floor and clip cap it accepts.
    pub policy: NodePolicy,
    /// Source of the ephemeral node keys.
    pub randomness: SecretRandomness,
    /// Retry schedule when dialling another node (the dialler retries forever, in rounds of
    /// this schedule, and logs each failed round).
    pub backoff: Backoff,
}

impl std::fmt::Debug for NodeRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRun")
            .field("nodes", &self.nodes)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// A bound node endpoint.
#[derive(Debug)]
pub struct NodeServer {
    id: NodeId,
    endpoint: Arc<Endpoint>,
    /// Verifies the parties' channel signatures against the consortium CA of the node's
    /// identity.
    verifier: vtwin_net::relay_signature::RelayVerifier,
}

impl NodeServer {
    /// Binds `listen` as node `id` (its certificate must say so), accepting the coordinator,
    /// the nodes with a lower id and every party (their uploads). Must be called inside a
    /// tokio runtime.
    pub fn bind(
        id: NodeId,
        identity: &Identity,
        listen: SocketAddr,
        transport: TransportOptions,
    ) -> Result<NodeServer, ServiceError> {
        let mut accept = vec![Role::Coordinator.into(), Accept::AnyParty];
        accept.extend((0..id.index() as u8).map(|j| Accept::Role(Role::Node(j))));
        let endpoint = Endpoint::bind(listen, identity, &accept, transport)?;
        Ok(NodeServer {
            id,
            endpoint: Arc::new(endpoint),
            verifier: vtwin_net::relay_signature::RelayVerifier::new(identity),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> Result<SocketAddr, ServiceError> {
        Ok(self.endpoint.local_addr()?)
    }

    /// Serves sessions until the endpoint closes (an error: `NoMoreLinks`) or the returned
    /// future is dropped. Errors of one session or one link are logged and reported to the
    /// coordinator; the node keeps serving.
    ///
    /// The session (not `Send`: the circuit's runtime shares state between its steps) runs
    /// on a thread of its own (`vtwin-node-i`) that also reads the node's inbox and hands
    /// its replies to the links' writer tasks, while the links' tasks run on the caller's
    /// runtime: a frame goes to and from the session thread without an event-loop task in
    /// between (docs/network-results.md). Dropping the returned future stops that thread
    /// after the events already queued.
    pub async fn serve(self, run: NodeRun) -> Result<(), ServiceError> {
        let me = self.id;
        let role = Role::Node(me.index() as u8);
        // Links arrive through the inbox, in order with the frames; the link channel of
        // `Hub::new` is unused.
        let (mut hub, _links) = Hub::new(role);
        for j in (0..3u8).filter(|&j| usize::from(j) != me.index()) {
            hub.mesh.expect(Role::Node(j));
        }
        let links = hub.inbox();
        let stop = StopOnDrop(hub.inbox_sender());
        let redial: HashMap<Role, Arc<Notify>> = ((me.index() + 1)..3)
            .map(|j| (Role::Node(j as u8), Arc::new(Notify::new())))
            .collect();
        // The thread first, so that a failure to start it leaves no task behind.
        let runtime = tokio::runtime::Handle::current();
        let span = tracing::Span::current();
        let verifier = self.verifier.clone();
        let notify = redial.clone();
        let (done_tx, done_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name(format!("vtwin-node-{}", me.index()))
            .spawn(move || {
                // Attaching a link spawns its reader and writer on the caller's runtime.
                let _in_runtime = runtime.enter();
                let _in_span = span.enter();
                let mut session =
                    NodeSession::new(me, run.seal_key, verifier, run.policy, run.randomness);
                let served = serve_events(me, &mut hub, &mut session, &notify);
                let _ = done_tx.send(served);
            })
            .map_err(|e| ServiceError::Stopped(StopCause::Spawn(e)))?;
        Hub::accept_from(self.endpoint.clone(), links.clone());
        // Diallers of the higher nodes: connect, wait until the link drops, redial.
        for j in (me.index() + 1)..3 {
            let peer = Role::Node(j as u8);
            Hub::dial(
                self.endpoint.clone(),
                links.clone(),
                peer,
                run.nodes[j],
                run.backoff,
                redial[&peer].clone(),
            );
        }
        tracing::info!(node = %role, addr = ?self.endpoint.local_addr().ok(), "node serving");
        let served = done_rx
            .await
            .unwrap_or(Err(ServiceError::Stopped(StopCause::SessionThread)));
        drop(stop);
        served
    }
}

/// Sends [`Inbound::Stop`] when dropped, so the session thread ends with the service.
struct StopOnDrop(tokio::sync::mpsc::UnboundedSender<Inbound>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Inbound::Stop);
    }
}

/// The session thread's loop: every event of the hub to the session, its replies to the
/// links, until [`Inbound::Stop`].
fn serve_events(
    me: NodeId,
    hub: &mut Hub,
    session: &mut NodeSession,
    redial: &HashMap<Role, Arc<Notify>>,
) -> Result<(), ServiceError> {
    while let Some(ev) = hub.blocking_next()? {
        match ev {
            Event::Frame(peer, f) => {
                let span = tracing::info_span!("iteration", t = f.iteration, node = me.index());
                let _in_span = span.enter();
                let out = session.handle(peer, f);
                route(&mut hub.mesh, session, out);
            }
            Event::Down(peer, cause) => {
                if let Some(n) = redial.get(&peer) {
                    n.notify_one();
                }
                let out = session.link_lost(peer, LinkLoss::Transport(cause));
                route(&mut hub.mesh, session, out);
            }
        }
    }
    Ok(())
}

fn route(mesh: &mut Mesh, session: &mut NodeSession, out: NodeOutput) {
    if let Some(e) = &out.error {
        tracing::warn!("session dropped: {}", Chain(e));
    }
    if let Some((t, c)) = out.finished {
        tracing::info!(
            iteration = t,
            rounds = c.rounds,
            bytes = c.bytes,
            "session finished"
        );
    }
    // A session that ended without finishing (abort, failure): its waiting frames are void.
    let void = out.open.is_none() && out.finished.is_none();
    let mut missing = None;
    for o in out.send {
        if !mesh.send(o.to, o.frame) {
            missing.get_or_insert(o.to);
        }
    }
    if let Some(peer) = missing {
        if peer == Role::Coordinator {
            tracing::warn!("no link to the coordinator; its frames are dropped");
        } else {
            let out = session.link_lost(peer, LinkLoss::NoLink);
            if let Some(e) = &out.error {
                tracing::warn!("session dropped: {}", Chain(e));
            }
            for o in out.send {
                mesh.send(o.to, o.frame);
            }
        }
    }
    if void {
        mesh.clear_pending();
    }
}
