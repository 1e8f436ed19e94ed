//! `vtwin node`: a compute node serving sessions over QUIC ([`NodeServer`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::config::NodePolicy;
use tokio::sync::{oneshot, Notify};
use tracing::Instrument;
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_mpc::NodeId;
use vtwin_net::pki::Identity;
use vtwin_net::transport::{Backoff, Endpoint, TransportOptions};
use vtwin_net::{Role, SealKey};

use super::mesh::{Event, Hub, Mesh};
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
    /// Verifies the parties' upload signatures against the consortium CA of the node's
    /// identity.
    verifier: vtwin_net::relay_signature::RelayVerifier,
}

impl NodeServer {
    /// Binds `listen` as node `id` (its certificate must say so), accepting the coordinator
    /// and the nodes with a lower id. Must be called inside a tokio runtime.
    pub fn bind(
        id: NodeId,
        identity: &Identity,
        listen: SocketAddr,
        transport: TransportOptions,
    ) -> Result<NodeServer, ServiceError> {
        let mut accept = vec![Role::Coordinator];
        accept.extend((0..id.index() as u8).map(Role::Node));
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

    /// Serves sessions until the endpoint closes (or forever). Errors of one session or
    /// one link are logged and reported to the coordinator; the node keeps serving.
    pub async fn serve(self, run: NodeRun) -> Result<(), ServiceError> {
        let me = self.id;
        let role = Role::Node(me.index() as u8);
        let (mut hub, links_tx) = Hub::new(role);
        for j in (0..3u8).filter(|&j| usize::from(j) != me.index()) {
            hub.mesh.expect(Role::Node(j));
        }
        let session = SessionThread::spawn(
            me,
            run.seal_key,
            self.verifier.clone(),
            run.policy,
            run.randomness,
        )?;
        Hub::accept_from(self.endpoint.clone(), links_tx.clone());
        // Diallers of the higher nodes: connect, wait until the link drops, redial.
        let mut redial: HashMap<Role, Arc<Notify>> = HashMap::new();
        for j in (me.index() + 1)..3 {
            let peer = Role::Node(j as u8);
            let notify = Arc::new(Notify::new());
            redial.insert(peer, notify.clone());
            let (endpoint, links_tx, addr, backoff) = (
                self.endpoint.clone(),
                links_tx.clone(),
                run.nodes[j],
                run.backoff,
            );
            tokio::spawn(async move {
                loop {
                    match endpoint.connect(addr, peer, backoff).await {
                        Ok(link) => {
                            if links_tx.send(link).is_err() {
                                return;
                            }
                            notify.notified().await;
                        }
                        Err(e) => {
                            tracing::warn!(node = %role, "{}; retrying", Chain(&e));
                            tokio::time::sleep(backoff.max).await;
                        }
                    }
                }
            });
        }
        drop(links_tx);
        tracing::info!(node = %role, addr = ?self.endpoint.local_addr().ok(), "node serving");
        loop {
            match hub.next().await? {
                Event::Frame(peer, f) => {
                    let span = tracing::info_span!("iteration", t = f.iteration, node = me.index());
                    let out = session.call(Cmd::Frame(peer, f), span.clone()).await?;
                    route(&mut hub.mesh, &session, out).instrument(span).await?;
                }
                Event::Down(peer, cause) => {
                    if let Some(n) = redial.get(&peer) {
                        n.notify_one();
                    }
                    let out = session
                        .call(
                            Cmd::LinkLost(peer, LinkLoss::Transport(cause)),
                            tracing::Span::current(),
                        )
                        .await?;
                    route(&mut hub.mesh, &session, out).await?;
                }
            }
        }
    }
}

/// A request to the session thread.
enum Cmd {
    Frame(Role, vtwin_net::Frame),
    LinkLost(Role, LinkLoss),
}

type Call = (Cmd, tracing::Span, oneshot::Sender<NodeOutput>);

/// The [`NodeSession`] lives on its own OS thread: the vtwin-mpc node is a single-threaded
/// state machine (not `Send`), and its local work is CPU-bound.
struct SessionThread {
    tx: std::sync::mpsc::Sender<Call>,
}

impl SessionThread {
    fn spawn(
        id: NodeId,
        seal_key: SealKey,
        verifier: vtwin_net::relay_signature::RelayVerifier,
        policy: NodePolicy,
        randomness: SecretRandomness,
    ) -> Result<SessionThread, ServiceError> {
        let (tx, rx) = std::sync::mpsc::channel::<Call>();
        std::thread::Builder::new()
            .name(format!("vtwin-node-{}", id.index()))
            .spawn(move || {
                let mut session = NodeSession::new(id, seal_key, verifier, policy, randomness);
                while let Ok((cmd, span, reply)) = rx.recv() {
                    let out = span.in_scope(|| match cmd {
                        Cmd::Frame(peer, f) => session.handle(peer, f),
                        Cmd::LinkLost(peer, cause) => session.link_lost(peer, cause),
                    });
                    // The caller waits for every reply; if it is gone, so is the service.
                    if reply.send(out).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| ServiceError::Stopped(StopCause::Spawn(e)))?;
        Ok(SessionThread { tx })
    }

    async fn call(&self, cmd: Cmd, span: tracing::Span) -> Result<NodeOutput, ServiceError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send((cmd, span, reply))
            .map_err(|_| ServiceError::Stopped(StopCause::SessionThread))?;
        rx.await
            .map_err(|_| ServiceError::Stopped(StopCause::SessionThread))
    }
}

async fn route(
    mesh: &mut Mesh,
    session: &SessionThread,
    out: NodeOutput,
) -> Result<(), ServiceError> {
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
            let out = session
                .call(
                    Cmd::LinkLost(peer, LinkLoss::NoLink),
                    tracing::Span::current(),
                )
                .await?;
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
    Ok(())
}
