//! Wrong-node, duplicate, malformed and out-of-range inputs are errors, never panics.

mod common;

use std::future::Future;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_mpc::keys::simulated_seeds;
use vtwin_mpc::multiply::mul;
use vtwin_mpc::{
    Ctx, InputClient, InputError, InputRange, Message, MpcError, Node, NodeId, Opening, Packing,
    Peer, SessionId, Shared, Simulation, WireError,
};

const S: SessionId = common::SESSION;

/// Three nodes seeded from `seed`, each running `program`, started; returns the nodes and
/// their first messages.
fn start_nodes<F, Fut>(seed: u64, program: F) -> (Vec<Node<Shared>>, Vec<Message>)
where
    F: Fn(Ctx) -> Fut,
    Fut: Future<Output = Result<Shared, MpcError>> + 'static,
{
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let seeds = simulated_seeds(&mut rng, S).expect("seeds");
    let mut nodes: Vec<Node<Shared>> = seeds
        .into_iter()
        .zip(NodeId::ALL)
        .map(|(s, id)| Node::new(id, S, s, 1, &program))
        .collect();
    let mut msgs = Vec::new();
    for n in nodes.iter_mut() {
        msgs.extend(n.start().expect("start"));
    }
    (nodes, msgs)
}

/// Three nodes that each run one multiplication of a public vector (1 round: node i
/// receives only from node i+1), started; returns the nodes and their first messages.
fn started() -> (Vec<Node<Shared>>, Vec<Message>) {
    start_nodes(5, |ctx| async move {
        let x = Shared::public(ctx.id(), &[3, 4, 5]);
        mul(&ctx, &x, &x).await
    })
}

/// Three nodes that each run two dependent multiplications (2 rounds), started.
fn started_two_rounds() -> (Vec<Node<Shared>>, Vec<Message>) {
    start_nodes(6, |ctx| async move {
        let x = Shared::public(ctx.id(), &[3]);
        let y = mul(&ctx, &x, &x).await?;
        mul(&ctx, &y, &x).await
    })
}

fn msg_to(msgs: &[Message], from: u8, to: u8) -> Message {
    let f = Peer::Node(NodeId::new(from).expect("id"));
    let t = Peer::Node(NodeId::new(to).expect("id"));
    msgs.iter()
        .find(|m| m.from == f && m.to == t)
        .cloned()
        .expect("message")
}

#[test]
fn honest_run_completes() {
    let (mut nodes, msgs) = started();
    for m in msgs {
        let Peer::Node(to) = m.to else {
            panic!("client")
        };
        assert!(nodes[to.index()].handle(m).expect("handle").is_empty());
    }
    let outs: Vec<Shared> = nodes
        .iter_mut()
        .map(|n| n.take_output().expect("done"))
        .collect();
    let opened = vtwin_mpc::sim::reconstruct(&[outs[0].clone(), outs[1].clone(), outs[2].clone()]);
    assert_eq!(opened, vec![9, 16, 25]);
}

#[test]
fn errors_poison_the_node() {
    let (mut nodes, msgs) = started();
    let m = msg_to(&msgs, 1, 0);
    // Deliver a copy before the original completes the round: the second is a duplicate.
    let mut early = m.clone();
    early.payload.clear();
    let n0 = &mut nodes[0];
    assert!(matches!(n0.handle(early), Err(MpcError::Malformed { .. })));
    assert_eq!(n0.handle(m), Err(MpcError::Poisoned));

    let (mut nodes, msgs) = started();
    let m = msg_to(&msgs, 1, 0);
    nodes[0].handle(m.clone()).expect("first");
    // The node has finished; anything more is refused.
    assert_eq!(nodes[0].handle(m), Err(MpcError::Poisoned));
}

#[test]
fn duplicate_pending_message() {
    // A node that waits on two rounds: the second copy of a future-round message is a
    // duplicate even before it is consumed.
    let (mut nodes, msgs) = started_two_rounds();
    let m = msg_to(&msgs, 1, 0);
    // Node 2 has not sent anything to node 0 in round 0, so node 0 stays in round 0.
    let mut fake = m.clone();
    fake.step = 1;
    nodes[0]
        .handle(fake.clone())
        .expect("future message is buffered");
    assert_eq!(
        nodes[0].handle(fake),
        Err(MpcError::Duplicate {
            from: m.from,
            step: 1
        })
    );
}

#[test]
fn wrong_node_is_an_error() {
    let (mut nodes, msgs) = started();
    // Node 0 receives only from node 1 in this round; a message from node 2 is unexpected.
    let mut wrong = msg_to(&msgs, 1, 0);
    wrong.from = Peer::Node(NodeId::new(2).expect("id"));
    nodes[0]
        .handle(wrong)
        .expect("buffered until the round completes");
    let right = msg_to(&msgs, 1, 0);
    assert!(matches!(
        nodes[0].handle(right),
        Err(MpcError::Unexpected { step: 0, .. })
    ));
}

#[test]
fn late_message_for_a_finished_round_is_an_error() {
    let (mut nodes, msgs) = started_two_rounds();
    nodes[0].handle(msg_to(&msgs, 1, 0)).expect("round 0");
    let mut late = msg_to(&msgs, 1, 0);
    late.from = Peer::Node(NodeId::new(2).expect("id"));
    assert!(matches!(
        nodes[0].handle(late),
        Err(MpcError::Unexpected { step: 0, .. })
    ));
}

#[test]
fn malformed_messages_are_errors() {
    let (mut nodes, msgs) = started();
    let good = msg_to(&msgs, 1, 0);
    let bytes = good.encode();
    // Truncated, extended, bad magic, bad peer tag: wire errors, never panics.
    for bad in [
        bytes[..10].to_vec(),
        bytes[..bytes.len() - 1].to_vec(),
        [bytes.clone(), vec![0]].concat(),
        [b"XXXX".to_vec(), bytes[4..].to_vec()].concat(),
    ] {
        let (mut nodes, _) = started();
        assert!(matches!(
            nodes[0].handle_bytes(&bad),
            Err(MpcError::Wire(_))
        ));
    }
    let mut tag = bytes.clone();
    tag[20] = 7;
    assert!(matches!(
        Message::decode(&tag),
        Err(WireError::Peer { tag: 7, .. })
    ));
    let mut node3 = bytes.clone();
    node3[21] = 3;
    assert!(matches!(
        Message::decode(&node3),
        Err(WireError::Peer { .. })
    ));
    // Wrong length payload.
    let mut short = good.clone();
    short.payload.pop();
    assert!(matches!(
        nodes[0].handle(short),
        Err(MpcError::Malformed {
            expected: 3,
            got: 2,
            ..
        })
    ));
    // Random bytes of many lengths never panic.
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    use rand_chacha::rand_core::RngCore;
    for len in 0..200 {
        let mut b = vec![0u8; len];
        rng.fill_bytes(&mut b);
        let (mut nodes, _) = started();
        assert!(nodes[0].handle_bytes(&b).is_err());
    }
}

#[test]
fn header_errors() {
    let (_, msgs) = started();
    let good = msg_to(&msgs, 1, 0);
    type Check = fn(&MpcError) -> bool;
    let cases: Vec<(Message, Check)> = vec![
        (
            Message {
                session: SessionId([0; 16]),
                ..good.clone()
            },
            |e| matches!(e, MpcError::WrongSession { .. }),
        ),
        (
            Message {
                to: Peer::Node(NodeId::new(1).expect("id")),
                ..good.clone()
            },
            |e| matches!(e, MpcError::Misrouted { .. }),
        ),
        (
            Message {
                from: Peer::Node(NodeId::new(0).expect("id")),
                ..good.clone()
            },
            |e| matches!(e, MpcError::UnknownPeer { .. }),
        ),
        (
            Message {
                from: Peer::Client(1),
                ..good.clone()
            },
            |e| matches!(e, MpcError::UnknownPeer { .. }),
        ),
    ];
    for (m, ok) in cases {
        let (mut nodes, _) = started();
        let e = nodes[0].handle(m).expect_err("must fail");
        assert!(ok(&e), "{e}");
    }
}

#[test]
fn missing_input_stalls_instead_of_hanging() {
    let r = Simulation::new(S, 1)
        .expect("sim")
        .clients(1)
        .run(|ctx| async move {
            let seeds = vtwin_mpc::input::accept_client(&ctx, 0).await?;
            vtwin_mpc::input::input(&ctx, &seeds, 1, 4).await
        });
    assert!(matches!(r, Err(MpcError::Stalled { .. })));
}

#[test]
fn client_rejects_out_of_range_inputs_before_sharing() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (mut c, _) = InputClient::new(0, S, &mut rng);
    let range = InputRange { min: 0.0, max: 1.0 };
    for (vals, idx) in [
        (vec![0.5, 1.5], 1usize),
        (vec![-0.1], 0),
        (vec![0.0, 1.0, f64::NAN], 2),
        (vec![f64::INFINITY], 0),
    ] {
        let seq = c.next_seq();
        match c.share(&vals, range) {
            Err(InputError::OutOfRange { index, .. }) => assert_eq!(index, idx),
            other => panic!("{vals:?}: {other:?}"),
        }
        assert_eq!(c.next_seq(), seq, "nothing may be consumed or sent");
    }
    assert!(matches!(
        c.share(&[0.0], InputRange { min: 1.0, max: 0.0 }),
        Err(InputError::BadRange { .. })
    ));
    assert!(matches!(
        c.share(
            &[0.0],
            InputRange {
                min: f64::NEG_INFINITY,
                max: 0.0
            }
        ),
        Err(InputError::BadRange { .. })
    ));
    // The correction goes to node 1 and to node 2.
    let sent = c.share(&[0.0, 1.0], range).expect("ok");
    assert_eq!(
        sent.iter().map(|m| m.to).collect::<Vec<_>>(),
        [Peer::Node(NodeId::ALL[1]), Peer::Node(NodeId::ALL[2])]
    );
    assert_eq!(sent[0].payload, sent[1].payload);
}

#[test]
fn opening_rejects_bad_shares() {
    let mut o = Opening::new(S, 1, 2);
    let base = Message {
        session: S,
        from: Peer::Node(NodeId::new(0).expect("id")),
        to: Peer::Client(1),
        step: 4,
        payload: vec![1, 2],
        packing: Packing::whole(),
    };
    o.handle(base.clone()).expect("first");
    assert!(matches!(
        o.handle(base.clone()),
        Err(MpcError::Duplicate { .. })
    ));
    let wrong_step = Message {
        from: Peer::Node(NodeId::new(1).expect("id")),
        step: 5,
        ..base.clone()
    };
    assert!(matches!(
        o.handle(wrong_step),
        Err(MpcError::Unexpected { .. })
    ));
    let wrong_len = Message {
        from: Peer::Node(NodeId::new(1).expect("id")),
        payload: vec![1],
        ..base.clone()
    };
    assert!(matches!(
        o.handle(wrong_len),
        Err(MpcError::Malformed { .. })
    ));
    let from_client = Message {
        from: Peer::Client(0),
        ..base.clone()
    };
    assert!(matches!(
        o.handle(from_client),
        Err(MpcError::UnknownPeer { .. })
    ));
    assert!(o.result().is_none());
}

#[test]
fn input_and_reveal_to_one_receiver() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (mut c, mut msgs) = InputClient::new(0, S, &mut rng);
    let vals = [0.25, -3.5, 1000.0, 0.0];
    msgs.extend(
        c.share(
            &vals,
            InputRange {
                min: -1e4,
                max: 1e4,
            },
        )
        .expect("share"),
    );
    let rep = Simulation::new(S, 3)
        .expect("sim")
        .clients(2)
        .inject(msgs)
        .run(|ctx| async move {
            let seeds = vtwin_mpc::input::accept_client(&ctx, 0).await?;
            let x = vtwin_mpc::input::input(&ctx, &seeds, 1, 4).await?;
            vtwin_mpc::input::reveal_to(&ctx, &x, 1).await
        })
        .expect("run");
    // Only client 1 received anything, three messages, one per node.
    assert_eq!(rep.to_clients.len(), 3);
    let t = rep.total();
    let mut o = Opening::new(S, 1, 4);
    for m in rep.to_clients.clone() {
        assert_eq!(m.to, Peer::Client(1));
        o.handle(m).expect("share");
    }
    let got: Vec<f64> = o
        .result()
        .expect("complete")
        .into_iter()
        .map(|r| vtwin_fixed::Fx(r).to_f64())
        .collect();
    assert_eq!(got, vals);
    // Upload: one ring element per value to each of nodes 1 and 2 (plus the one-off seeds
    // and headers).
    assert_eq!(
        rep.client_bytes as usize,
        3 * 38 + 16 * (4 + 2 + 2) + 2 * (38 + 16 * 4)
    );
    // Between nodes: only the consistency check before the reveal (1 round: node 0's seed
    // digests, 4 elements to each of nodes 1 and 2; nodes 1 and 2's digest, 2 elements each
    // way), then the reveal (1 round, nothing between nodes).
    assert_eq!((t.rounds, t.elements, t.messages), (2, 12, 4));
}

/// Nodes 1 and 2 and the messages they sent to clients, driven by hand until no message is
/// left: returns each node's first error.
fn drive_collecting(
    mut nodes: Vec<Node<Shared>>,
    msgs: Vec<Message>,
) -> (Vec<Option<MpcError>>, Vec<Message>) {
    let mut queue: std::collections::VecDeque<Message> = msgs.into();
    let mut errors: Vec<Option<MpcError>> = vec![None, None, None];
    let mut to_clients = Vec::new();
    for (i, n) in nodes.iter_mut().enumerate() {
        match n.start() {
            Ok(out) => queue.extend(out),
            Err(e) => errors[i] = Some(e),
        }
    }
    while let Some(m) = queue.pop_front() {
        match m.to {
            Peer::Client(_) => to_clients.push(m),
            Peer::Node(id) => {
                let i = id.index();
                if errors[i].is_some() {
                    continue;
                }
                match nodes[i].handle(m) {
                    Ok(out) => queue.extend(out),
                    Err(e) => errors[i] = Some(e),
                }
            }
        }
    }
    (errors, to_clients)
}

/// Runs "accept client 0's seeds, input 3 values, square them if `compute`, reveal to client
/// 0" over the client's (tampered) messages `msgs`, checks that nodes 1 and 2 revealed
/// nothing (node 0, which takes no part in the input check, may send its own share, uniform
/// on its own, so the opening never completes), and returns each node's first error.
fn run_tampered_input(mut msgs: Vec<Message>, compute: bool) -> Vec<Option<MpcError>> {
    let (nodes, started) = start_nodes(11, move |ctx| async move {
        let seeds = vtwin_mpc::input::accept_client(&ctx, 0).await?;
        let x = vtwin_mpc::input::input(&ctx, &seeds, 1, 3).await?;
        let y = if compute { mul(&ctx, &x, &x).await? } else { x };
        vtwin_mpc::input::reveal_to(&ctx, &y, 0).await?;
        Ok(y)
    });
    msgs.extend(started);
    let (errors, to_clients) = drive_collecting(nodes, msgs);
    assert!(
        to_clients
            .iter()
            .all(|m| m.from == Peer::Node(NodeId::ALL[0])),
        "nodes 1 and 2 may reveal nothing"
    );
    assert!(to_clients.len() <= 1);
    errors
}

/// A client that sends node 1 and node 2 different corrections is caught by nodes 1 and 2
/// before anything is revealed: directly before an opening, and in the first exchange of a
/// computation.
#[test]
fn inconsistent_corrections_are_refused_before_any_reveal() {
    for compute in [false, true] {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let (mut c, mut msgs) = InputClient::new(0, S, &mut rng);
        let mut input = c.share_raw(&[1, 2, 3]);
        input[0].payload[1] ^= 1; // node 1's copy differs in one bit
        msgs.extend(input);
        let errors = run_tampered_input(msgs, compute);
        for (i, other) in [(1usize, 2u8), (2, 1)] {
            assert_eq!(
                errors[i],
                Some(MpcError::InconsistentInput {
                    peer: Peer::Node(NodeId::new(other).expect("id"))
                }),
                "node {i}"
            );
        }
        let text = errors[1].as_ref().expect("error").to_string();
        assert!(text.contains("inconsistent inputs"), "{text}");
        assert!(errors[0].is_none());
    }
    // The same program with consistent corrections reveals.
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let (mut c, mut msgs) = InputClient::new(0, S, &mut rng);
    msgs.extend(c.share_raw(&[1, 2, 3]));
    let (nodes, started) = start_nodes(11, |ctx| async move {
        let seeds = vtwin_mpc::input::accept_client(&ctx, 0).await?;
        let x = vtwin_mpc::input::input(&ctx, &seeds, 1, 3).await?;
        vtwin_mpc::input::reveal_to(&ctx, &x, 0).await?;
        Ok(x)
    });
    msgs.extend(started);
    let (errors, to_clients) = drive_collecting(nodes, msgs);
    assert_eq!(errors, vec![None, None, None]);
    assert_eq!(to_clients.len(), 3);
}

/// A client that gives node 2 another `s_0` than node 0 (or node 1 another `s_1`) makes the
/// nodes hold inconsistent shares; nodes 1 and 2 both catch it (node 0's seed digests) before
/// anything is revealed, directly before an opening and in the first exchange of a
/// computation.
#[test]
fn inconsistent_seeds_are_refused_before_any_reveal() {
    // (setup message to flip: index into the client's setup messages (to nodes 0, 1, 2),
    // and the node that holds the altered copy)
    for (msg, altered) in [(2usize, 2usize), (1, 1)] {
        for compute in [false, true] {
            let mut rng = ChaCha20Rng::seed_from_u64(9);
            let (mut c, mut msgs) = InputClient::new(0, S, &mut rng);
            msgs[msg].payload[0] ^= 1; // one bit of that node's copy of its seed
            msgs.extend(c.share_raw(&[1, 2, 3]));
            let errors = run_tampered_input(msgs, compute);
            // The node with the altered copy finds node 0's digest differs; the other finds
            // its peer's.
            for (i, other) in [(1usize, 2u8), (2, 1)] {
                let peer = if i == altered { 0 } else { other };
                assert_eq!(
                    errors[i],
                    Some(MpcError::InconsistentInput {
                        peer: Peer::Node(NodeId::new(peer).expect("id"))
                    }),
                    "node {i}, altered copy at node {altered}, compute {compute}"
                );
            }
            assert!(errors[0].is_none());
        }
    }
}

/// A program that returns after inputs with no later exchange or opening never ran the
/// consistency check: the nodes refuse to finish.
#[test]
fn finishing_with_unchecked_inputs_is_an_error() {
    for (with_input, checked) in [(true, false), (false, false), (true, true)] {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let (mut c, mut msgs) = InputClient::new(0, S, &mut rng);
        msgs.extend(c.share_raw(&[1, 2, 3]));
        let (nodes, started) = start_nodes(11, move |ctx| async move {
            let seeds = vtwin_mpc::input::accept_client(&ctx, 0).await?;
            let x = if with_input {
                vtwin_mpc::input::input(&ctx, &seeds, 1, 3).await?
            } else {
                Shared::public(ctx.id(), &[1, 2, 3])
            };
            if checked {
                vtwin_mpc::input::check_inputs(&ctx).await?;
            }
            Ok(x)
        });
        if !with_input {
            msgs.truncate(3); // the setup only
        }
        msgs.extend(started);
        let (errors, _) = drive_collecting(nodes, msgs);
        let want = if checked {
            None
        } else {
            Some(MpcError::UncheckedInput)
        };
        assert_eq!(
            errors,
            vec![want.clone(), want.clone(), want],
            "{with_input} {checked}"
        );
    }
}
