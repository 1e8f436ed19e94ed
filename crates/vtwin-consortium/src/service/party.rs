//! `vtwin party`: a party answering the coordinator over QUIC ([`PartyServer`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::Notify;
use vtwin_net::pki::Identity;
use vtwin_net::transport::{Backoff, Endpoint, TransportOptions};
use vtwin_net::{Body, Role};

use super::mesh::{Event, Hub, LinkTo};
use super::{ServiceError, StopCause};
use crate::outgoing::{frame, Attempt, Outgoing};
use crate::party::{failure, PartyError, PartyResponder};

/// A bound party endpoint.
#[derive(Debug)]
pub struct PartyServer {
    endpoint: Arc<Endpoint>,
}

impl PartyServer {
    /// Binds `listen`, accepting the coordinator only (the party dials the nodes from the
    /// same endpoint). Inside a tokio runtime.
    pub fn bind(
        identity: &Identity,
        listen: SocketAddr,
        transport: TransportOptions,
    ) -> Result<PartyServer, ServiceError> {
        let endpoint = Endpoint::bind(listen, identity, &[Role::Coordinator.into()], transport)?;
        Ok(PartyServer {
            endpoint: Arc::new(endpoint),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> Result<SocketAddr, ServiceError> {
        Ok(self.endpoint.local_addr()?)
    }

    /// Answers the coordinator until the returned future is dropped; a failed request is
    /// logged and reported with `Failed`, and the party keeps serving. The party dials the
    /// three `nodes` (and redials one whose link drops, each round per `backoff`) and sends
    /// each its upload over that link; an upload for a node without a link waits for it
    /// until the next job, request or abort, and a node link that goes down after an upload is
    /// reported to the coordinator (`LinkLost`). After each reply is handed to its link the next
    /// noise share is sampled ([`PartyResponder::prepare_noise`]), off the request path.
    pub async fn serve(
        self,
        mut responder: PartyResponder,
        nodes: [SocketAddr; 3],
        backoff: Backoff,
    ) -> Result<(), ServiceError> {
        let me = responder.role();
        let (mut hub, links) = Hub::new(me);
        let mut redial = HashMap::new();
        for (i, &addr) in nodes.iter().enumerate() {
            let node = Role::Node(i as u8);
            hub.mesh.expect(node);
            let notify = Arc::new(Notify::new());
            redial.insert(node, notify.clone());
            Hub::dial(
                self.endpoint.clone(),
                LinkTo::Links(links.clone()),
                node,
                addr,
                backoff,
                notify,
            );
        }
        Hub::accept_from(self.endpoint.clone(), LinkTo::Links(links));
        tracing::info!(party = %me, addr = ?self.endpoint.local_addr().ok(), rows = responder.rows(), "party serving");
        // The session attempt and iteration of the last upload handed to the node links.
        let mut uploaded: Option<(Attempt, u64)> = None;
        loop {
            let (peer, f) = match hub.next().await? {
                Event::Frame(peer, f) => (peer, f),
                Event::Down(peer, _) => {
                    if let Some(n) = redial.get(&peer) {
                        n.notify_one();
                        // The upload may have gone down with the link: the coordinator
                        // aborts that attempt if it is still running (and ignores a report
                        // of one that finished), instead of waiting for its deadline.
                        if let Some((at, t)) = uploaded {
                            let lost = frame(me, at, t, 0, Body::LinkLost { peer });
                            hub.mesh.send(Role::Coordinator, lost);
                        }
                    }
                    continue;
                }
            };
            // The node links carry the party's uploads only: whatever a node sends on one is
            // dropped, so that no node can void the party's queue or report in its name.
            if peer != Role::Coordinator {
                tracing::warn!(party = %me, %peer, "dropped a frame from a node");
                continue;
            }
            // A new job, a new request or an abort ends the last iteration: uploads still
            // waiting for a node's link are void.
            if matches!(
                f.body,
                Body::Hello | Body::AlignStart { .. } | Body::Request { .. } | Body::Abort { .. }
            ) {
                hub.mesh.clear_pending();
                uploaded = None;
            }
            let span = tracing::info_span!("iteration", t = f.iteration, party = %me);
            // A request's kernels, shares and seals (milliseconds) and an alignment step (a
            // whole set of points, seconds at a million ids) run where blocking is allowed,
            // so the links keep their keep-alives going and, in a one-process run, the
            // other roles' links move to another thread meanwhile. (block_in_place needs the
            // multi-threaded runtime every vtwin service runs on.)
            let heavy = matches!(
                f.body,
                Body::Request { .. } | Body::AlignStart { .. } | Body::Align { .. }
            ) && tokio::runtime::Handle::current().runtime_flavor()
                == tokio::runtime::RuntimeFlavor::MultiThread;
            // Runs one step of the responder; an error is logged and reported as `Failed`.
            let step = |run: &mut dyn FnMut() -> Result<Vec<Outgoing>, PartyError>| {
                let mut reply = || {
                    run().unwrap_or_else(|e| {
                        tracing::warn!("{}", vtwin_host::error_chain::Chain(&e));
                        match me {
                            Role::Party(p) => vec![failure(p, &f, &e)],
                            _ => Vec::new(),
                        }
                    })
                };
                span.in_scope(|| {
                    if heavy {
                        tokio::task::block_in_place(&mut reply)
                    } else {
                        reply()
                    }
                })
            };
            let out = step(&mut || responder.handle(peer, &f));
            if out
                .iter()
                .any(|o| matches!(o.frame.body, Body::Upload { .. }))
            {
                uploaded = Some((Attempt::of(&f), f.iteration));
            }
            send(&mut hub, out);
            // The first part of an upload is on its links' tasks: seal the rest meanwhile.
            let rest = step(&mut || responder.upload_rest());
            send(&mut hub, rest);
            // The reply is queued on its link's own task; the sampling runs on the blocking
            // pool, so the link tasks send meanwhile and the coordinator's next request
            // (after a whole MPC iteration) finds the share ready.
            responder = tokio::task::spawn_blocking(move || {
                responder.prepare_noise();
                responder
            })
            .await
            .map_err(|e| ServiceError::Stopped(StopCause::NoiseTask(e)))?;
        }
    }
}

/// Hands each frame to its link; one without a link is logged and dropped.
fn send(hub: &mut Hub, out: Vec<Outgoing>) {
    for o in out {
        if !hub.mesh.send(o.to, o.frame) {
            tracing::warn!(to = %o.to, "no link; reply dropped");
        }
    }
}
