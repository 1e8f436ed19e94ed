//! Wire format: round trips, refusals, the sequence guard, and decoding arbitrary bytes.

use proptest::prelude::*;
use vtwin_fixed::Fx;
use vtwin_mpc::gradient::{CircuitPublic, PartyMap};
use vtwin_net::frame::{
    body_len, decode, encode, Body, Frame, FrameError, PublicError, SeqCounter, SeqGuard,
    WirePartyMap, WirePublic, LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES, WIRE_VERSION,
};
use vtwin_net::{Allowed, Budget, JobTerms, Refusal, Role, Term};

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::Coordinator),
        any::<u8>().prop_map(Role::Node),
        any::<u16>().prop_map(Role::Party),
    ]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn wire_public() -> impl Strategy<Value = WirePublic> {
    let map = (
        any::<u32>(),
        proptest::collection::vec(any::<u128>(), 0..6),
        proptest::collection::vec(any::<u128>(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(width, scale, offset, integer_stats)| WirePartyMap {
            width,
            scale,
            offset,
            integer_stats,
        });
    (
        any::<u32>(),
        any::<u32>(),
        proptest::collection::vec(any::<u128>(), 0..6),
        any::<u128>(),
        proptest::collection::vec(map, 0..3),
        any::<u32>(),
    )
        .prop_map(
            |(batch, components, pi, clip, parties, noise_contributors)| WirePublic {
                batch,
                components,
                pi,
                clip,
                parties,
                noise_contributors,
            },
        )
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        Just(Body::Hello),
        (any::<u64>(), any::<[u8; 32]>())
            .prop_map(|(rows, ids_digest)| Body::PartyInfo { rows, ids_digest }),
        (wire_public(), terms()).prop_map(|(public, terms)| Body::Start { public, terms }),
        (any::<[u8; 32]>(), any::<[u8; 32]>())
            .prop_map(|(public, start)| Body::NodeKey { public, start }),
        (
            proptest::collection::vec(any::<u32>(), 0..8),
            proptest::collection::vec(
                any::<f64>().prop_filter("NaN != NaN", |x| !x.is_nan()),
                0..8
            ),
            terms()
        )
            .prop_map(|(batch, theta, terms)| Body::Request {
                batch,
                theta,
                terms
            }),
        (any::<u8>(), bytes(64), bytes(30), bytes(20), any::<u64>()).prop_map(
            |(part, sealed, certificate, signature, expires)| Body::Upload {
                part,
                sealed,
                certificate,
                signature,
                expires,
            }
        ),
        Just(Body::Uploaded),
        refusal().prop_map(|refusal| Body::Refused { refusal }),
        bytes(64).prop_map(|message| Body::Mpc { message }),
        ".{0,20}".prop_map(|reason| Body::Abort { reason }),
        ".{0,20}".prop_map(|reason| Body::Failed { reason }),
        any::<u16>().prop_map(|parties| Body::AlignStart { parties }),
        (bytes(200), bytes(600), bytes(72)).prop_map(|(message, certificate, signature)| {
            Body::Align {
                message,
                certificate,
                signature,
            }
        }),
        role().prop_map(|peer| Body::LinkLost { peer }),
    ]
}

fn number() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("NaN != NaN", |x| !x.is_nan())
}

fn terms() -> impl Strategy<Value = JobTerms> {
    (
        number(),
        number(),
        any::<u32>(),
        number(),
        any::<u64>(),
        number(),
        any::<[u8; 32]>(),
        number(),
        any::<u64>(),
    )
        .prop_map(|t| JobTerms {
            sigma: t.0,
            clip: t.1,
            components: t.2,
            sample_rate: t.3,
            iterations: t.4,
            delta: t.5,
            rows: t.6,
            tempering_start: t.7,
            tempering_iterations: t.8,
        })
}

fn refusal() -> impl Strategy<Value = Refusal> {
    let term = prop_oneof![
        Just(Term::Sigma),
        Just(Term::Clip),
        Just(Term::Components),
        Just(Term::SampleRate),
        Just(Term::Iterations),
        Just(Term::Delta),
        Just(Term::Epsilon),
    ];
    let allowed = prop_oneof![
        number().prop_map(Allowed::AtLeast),
        number().prop_map(Allowed::AtMost),
        number().prop_map(Allowed::Exactly),
    ];
    prop_oneof![
        (term, allowed).prop_map(|(term, allowed)| Refusal::Policy { term, allowed }),
        any::<u64>().prop_map(|agreed| Refusal::Budget {
            budget: Budget::Openings { agreed }
        }),
        number().prop_map(|agreed| Refusal::Budget {
            budget: Budget::Epsilon { agreed }
        }),
        (".{0,10}", ".{0,10}").prop_map(|(quantity, range)| Refusal::Range { quantity, range }),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    (
        any::<u64>(),
        any::<[u8; 16]>(),
        any::<[u8; 8]>(),
        any::<u64>(),
        any::<u64>(),
        role(),
        body(),
    )
        .prop_map(
            |(seq, session, attempt, iteration, step, sender, body)| Frame {
                version: WIRE_VERSION,
                seq,
                session,
                attempt,
                iteration,
                step,
                sender,
                body,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// encode then decode is the identity, and the prefix announces the body length.
    #[test]
    fn round_trip(f in frame()) {
        let wire = encode(&f).unwrap();
        let len = body_len(wire[..4].try_into().unwrap()).unwrap();
        prop_assert_eq!(len, wire.len() - LENGTH_PREFIX_BYTES);
        prop_assert_eq!(decode(&wire[4..]).unwrap(), f);
    }

    /// Decoding arbitrary bytes never panics; whatever decodes re-encodes to the same bytes
    /// (no two byte strings mean the same frame).
    #[test]
    fn arbitrary_bytes_never_panic(mut b in bytes(300), versioned in any::<bool>()) {
        if versioned && !b.is_empty() {
            b[0] = WIRE_VERSION;
        }
        if let Ok(f) = decode(&b) {
            let wire = encode(&f).unwrap();
            prop_assert_eq!(&wire[4..], &b[..]);
        }
    }

    /// Valid frames with bytes overwritten: never a panic, and whatever decodes is canonical.
    #[test]
    fn mutated_frames_never_panic(
        f in frame(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let wire = encode(&f).unwrap();
        let mut b = wire[4..].to_vec();
        for (at, byte) in edits {
            let i = at.index(b.len());
            b[i] = byte;
        }
        if let Ok(g) = decode(&b) {
            let again = encode(&g).unwrap();
            prop_assert_eq!(&again[4..], &b[..]);
        }
    }

    /// Every strict prefix of a valid frame is refused (no partial frame is accepted).
    #[test]
    fn truncations_refused(f in frame()) {
        let wire = encode(&f).unwrap();
        let body = &wire[4..];
        for cut in 0..body.len() {
            prop_assert!(decode(&body[..cut]).is_err(), "prefix of {} bytes decoded", cut);
        }
    }
}

fn sample(seq: u64, sender: Role) -> Frame {
    let mut f = Frame::new(
        [3; 16],
        5,
        1,
        sender,
        Body::Mpc {
            message: vec![1, 2, 3],
        },
    );
    f.seq = seq;
    f
}

#[test]
fn refusals_name_the_cause() {
    let wire = encode(&sample(0, Role::Node(1))).unwrap();
    let body = &wire[4..];

    let mut v = body.to_vec();
    v[0] = WIRE_VERSION + 1;
    assert_eq!(
        decode(&v),
        Err(FrameError::Version {
            got: WIRE_VERSION + 1,
            want: WIRE_VERSION
        })
    );
    assert_eq!(decode(&[]), Err(FrameError::Empty));
    let mut t = body.to_vec();
    t.extend_from_slice(&[0, 0]);
    assert_eq!(decode(&t), Err(FrameError::Trailing { extra: 2 }));
    assert!(matches!(
        decode(&body[..body.len() - 1]),
        Err(FrameError::Malformed { .. })
    ));
    // An unknown Body variant index.
    let mut u = body.to_vec();
    // version, seq, session, attempt, iteration, step, Node(1)
    let variant_at = 1 + 1 + 16 + 8 + 1 + 1 + 2;
    assert_eq!(u[variant_at], 8, "Body::Mpc is variant 8");
    u[variant_at] = 100;
    assert!(matches!(decode(&u), Err(FrameError::Malformed { .. })));
}

#[test]
fn length_prefix_checked_before_allocating() {
    assert_eq!(body_len(0u32.to_le_bytes()), Err(FrameError::Empty));
    assert_eq!(
        body_len((MAX_FRAME_BYTES as u32).to_le_bytes()),
        Ok(MAX_FRAME_BYTES)
    );
    assert_eq!(
        body_len((MAX_FRAME_BYTES as u32 + 1).to_le_bytes()),
        Err(FrameError::TooLarge {
            len: MAX_FRAME_BYTES as u64 + 1,
            max: MAX_FRAME_BYTES
        })
    );
    assert!(matches!(
        body_len(u32::MAX.to_le_bytes()),
        Err(FrameError::TooLarge { .. })
    ));
}

#[test]
fn oversized_frames_refused_on_encode_and_decode() {
    let big = Frame::new(
        [0; 16],
        0,
        0,
        Role::Node(0),
        Body::Mpc {
            message: vec![0; MAX_FRAME_BYTES],
        },
    );
    assert!(matches!(encode(&big), Err(FrameError::TooLarge { .. })));
    // Just under the limit: header + varint length of the message fit.
    let fits = Frame::new(
        [0; 16],
        0,
        0,
        Role::Node(0),
        Body::Mpc {
            message: vec![0; MAX_FRAME_BYTES - 64],
        },
    );
    let wire = encode(&fits).unwrap();
    assert!(wire.len() - 4 <= MAX_FRAME_BYTES);
    assert_eq!(decode(&wire[4..]).unwrap(), fits);
    let too_long = vec![WIRE_VERSION; MAX_FRAME_BYTES + 1];
    assert!(matches!(
        decode(&too_long),
        Err(FrameError::TooLarge { .. })
    ));
}

#[test]
fn a_huge_announced_vector_length_does_not_allocate_it() {
    // Body::Mpc announcing 2^63 bytes in a 40-byte frame: refused without allocating.
    let wire = encode(&sample(0, Role::Node(1))).unwrap();
    let mut b = wire[4..wire.len() - 4].to_vec(); // drop the length varint 3 and the 3 bytes
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    assert!(matches!(decode(&b), Err(FrameError::Malformed { .. })));
}

#[test]
fn seq_guard_accepts_exactly_the_next_frame() {
    let peer = Role::Party(1);
    let mut guard = SeqGuard::new(peer);
    let mut counter = SeqCounter::new();
    let mut sent = Vec::new();
    for _ in 0..4 {
        let mut f = sample(99, peer);
        counter.stamp(&mut f);
        sent.push(f);
    }
    assert_eq!(
        sent.iter().map(|f| f.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    // Reordering: 1 before 0.
    assert_eq!(
        guard.check(&sent[1]),
        Err(FrameError::Sequence {
            peer,
            expected: 0,
            got: 1
        })
    );
    guard.check(&sent[0]).unwrap();
    // Duplicate.
    assert!(matches!(
        guard.check(&sent[0]),
        Err(FrameError::Sequence {
            expected: 1,
            got: 0,
            ..
        })
    ));
    guard.check(&sent[1]).unwrap();
    // Gap (a dropped frame).
    assert!(matches!(
        guard.check(&sent[3]),
        Err(FrameError::Sequence {
            expected: 2,
            got: 3,
            ..
        })
    ));
    guard.check(&sent[2]).unwrap();
    // Replay of an old frame.
    assert!(matches!(
        guard.check(&sent[0]),
        Err(FrameError::Sequence {
            expected: 3,
            got: 0,
            ..
        })
    ));
    assert_eq!(guard.expected(), 3);
    // Forged sender, right number.
    let forged = Frame {
        sender: Role::Party(2),
        ..sent[3].clone()
    };
    assert_eq!(
        guard.check(&forged),
        Err(FrameError::Sender {
            claimed: Role::Party(2),
            authenticated: peer
        })
    );
    // Wrong version in an otherwise valid frame.
    let old = Frame {
        version: 0,
        ..sent[3].clone()
    };
    assert!(matches!(guard.check(&old), Err(FrameError::Version { .. })));
    guard.check(&sent[3]).unwrap();
    assert_eq!(guard.expected(), 4);
    assert_eq!(guard.peer(), peer);
}

fn circuit(parties: &[usize], k: usize) -> CircuitPublic {
    let fx = |n: usize, s: i64| {
        (0..n)
            .map(|i| Fx::from_raw((s * i as i64) as u128))
            .collect()
    };
    CircuitPublic {
        batch: 12,
        components: k,
        pi: fx(k, 3),
        clip: Fx::from_raw(1 << 32),
        parties: parties
            .iter()
            .map(|&w| PartyMap {
                width: w,
                scale: fx(k * w, -5),
                offset: fx(k * w, 7),
                integer_stats: w % 2 == 0,
            })
            .collect(),
        noise_contributors: parties.len(),
    }
}

fn same(a: &CircuitPublic, b: &CircuitPublic) -> bool {
    a.batch == b.batch
        && a.components == b.components
        && a.pi == b.pi
        && a.clip == b.clip
        && a.noise_contributors == b.noise_contributors
        && a.parties.len() == b.parties.len()
        && a.parties.iter().zip(&b.parties).all(|(x, y)| x == y)
}

#[test]
fn circuit_public_round_trips_through_the_wire() {
    let c = circuit(&[4, 9], 3);
    let w = WirePublic::try_from(&c).unwrap();
    let terms = JobTerms {
        sigma: 1.5,
        clip: 1.0,
        components: 3,
        sample_rate: 0.01,
        iterations: 1000,
        delta: 1e-5,
        rows: [7; 32],
        tempering_start: 0.2,
        tempering_iterations: 500,
    };
    let f = Frame::new(
        [1; 16],
        2,
        0,
        Role::Coordinator,
        Body::Start { public: w, terms },
    );
    let back = match decode(&encode(&f).unwrap()[4..]).unwrap().body {
        Body::Start { public, terms: t } => {
            assert_eq!(t, terms);
            CircuitPublic::try_from(public).unwrap()
        }
        other => panic!("{other:?}"),
    };
    assert!(same(&c, &back));
}

#[test]
fn inconsistent_public_parameters_refused() {
    let good = WirePublic::try_from(&circuit(&[4, 9], 3)).unwrap();
    let mut w = good.clone();
    w.parties[1].offset.pop();
    assert_eq!(
        CircuitPublic::try_from(w).unwrap_err(),
        PublicError::Length {
            field: "parties[1].offset".into(),
            got: 26,
            want: 27
        }
    );
    let mut w = good.clone();
    w.pi.push(0);
    assert!(matches!(
        CircuitPublic::try_from(w),
        Err(PublicError::Length { ref field, .. }) if field == "pi"
    ));
    for zero in ["batch", "components", "parties", "noise_contributors"] {
        let mut w = good.clone();
        match zero {
            "batch" => w.batch = 0,
            "components" => {
                w.components = 0;
                w.pi.clear();
                for p in &mut w.parties {
                    p.scale.clear();
                    p.offset.clear();
                }
            }
            "parties" => w.parties.clear(),
            _ => w.noise_contributors = 0,
        }
        let err = CircuitPublic::try_from(w).unwrap_err();
        assert!(
            matches!(err, PublicError::Range { ref field, .. } if field == zero),
            "{zero}: {err}"
        );
    }
    // K w_p overflowing usize.
    let mut w = good;
    w.components = u32::MAX;
    w.parties[0].width = u32::MAX;
    assert!(CircuitPublic::try_from(w).is_err());
    // And from the circuit side.
    let mut c = circuit(&[2], 2);
    c.parties[0].scale.push(Fx::ZERO);
    assert!(WirePublic::try_from(&c).is_err());
}

#[test]
fn overlong_varints_refused() {
    // seq = 0 written in two bytes (0x80 0x00) instead of one: same value, other bytes.
    let wire = encode(&sample(0, Role::Node(1))).unwrap();
    let mut b = vec![wire[4], 0x80, 0x00];
    b.extend_from_slice(&wire[6..]);
    assert_eq!(decode(&b), Err(FrameError::NonCanonical));
}

proptest! {
    /// A `Request`'s size depends on how many batch indices it carries, never on their
    /// values: padding (u32::MAX) and real record numbers take 4 bytes each, so the frame's
    /// length does not tell the real batch size.
    #[test]
    fn request_size_does_not_depend_on_the_indices(
        a in proptest::collection::vec(any::<u32>(), 0..200),
        seed in any::<u32>(),
        terms in terms(),
    ) {
        let b: Vec<u32> = a.iter().map(|x| x ^ seed).collect();
        let size = |batch: Vec<u32>| {
            let body = Body::Request { batch, theta: vec![0.5; 3], terms };
            encode(&Frame::new([1; 16], 2, 0, Role::Coordinator, body)).unwrap().len()
        };
        let padding = vec![u32::MAX; a.len()];
        prop_assert_eq!(size(a.clone()), size(b));
        prop_assert_eq!(size(a), size(padding));
    }
}

proptest! {
    /// A `Start`'s ring elements are written at 16 bytes each whatever their values (a
    /// negative entry as a varint took 19): the frame's size is a function of the counts.
    #[test]
    fn start_size_does_not_depend_on_the_elements(
        public in wire_public(),
        seed in any::<u128>(),
        terms in terms(),
    ) {
        let size = |public: WirePublic| {
            let body = Body::Start { public, terms };
            encode(&Frame::new([1; 16], 2, 0, Role::Coordinator, body)).unwrap().len()
        };
        let mut other = public.clone();
        for v in other.pi.iter_mut() {
            *v ^= seed;
        }
        for p in other.parties.iter_mut() {
            for v in p.scale.iter_mut().chain(p.offset.iter_mut()) {
                *v = v.wrapping_neg() ^ seed;
            }
        }
        prop_assert_eq!(size(public.clone()), size(other.clone()));
        // And it round-trips.
        let f = Frame::new([1; 16], 2, 0, Role::Coordinator, Body::Start { public: other, terms });
        let wire = encode(&f).unwrap();
        prop_assert_eq!(decode(&wire[LENGTH_PREFIX_BYTES..]).unwrap(), f);
    }
}

/// A ring-element byte string that is not a whole number of 16-byte words is refused.
#[test]
fn a_ring_element_string_of_a_partial_word_is_refused() {
    let public = WirePublic {
        batch: 1,
        components: 1,
        pi: vec![u128::MAX],
        clip: 1,
        parties: vec![],
        noise_contributors: 1,
    };
    let f = Frame::new(
        [1; 16],
        2,
        0,
        Role::Coordinator,
        Body::Start {
            public,
            terms: JobTerms {
                sigma: 1.0,
                clip: 1.0,
                components: 1,
                sample_rate: 0.01,
                iterations: 10,
                delta: 1e-5,
                rows: [0; 32],
                tempering_start: 1.0,
                tempering_iterations: 0,
            },
        },
    );
    let wire = encode(&f).unwrap();
    let body = &wire[LENGTH_PREFIX_BYTES..];
    // pi's byte string: its length byte 16, then sixteen 0xff; drop one 0xff and say 15.
    let at = body
        .windows(17)
        .position(|w| w[0] == 16 && w[1..].iter().all(|b| *b == 0xff))
        .expect("pi's bytes");
    let mut bad = body[..at].to_vec();
    bad.push(15);
    bad.extend_from_slice(&body[at + 2..]);
    assert!(
        matches!(decode(&bad), Err(FrameError::Malformed(_))),
        "{:?}",
        decode(&bad)
    );
    // The untouched frame decodes.
    assert_eq!(decode(body).unwrap(), f);
}

/// The bulk frames (`Mpc`, `Upload`, `Align`) are encoded into one allocation of their size:
/// no geometric growth (which would copy the bytes again and leave up to half the buffer
/// unused), even with every header varint at its longest. The buffer is exactly what
/// `encode` reserves: its 96 bytes of slack (`ENCODE_SLACK`) plus the byte strings.
#[test]
fn bulk_frames_are_encoded_without_regrowing() {
    for n in [0usize, 1, 20_000, 1 << 20] {
        let bytes = |k: usize| vec![0xA5u8; k];
        let lens = [n, n + 600 + 72, n + 600 + 72];
        for (body, strings) in [
            Body::Mpc { message: bytes(n) },
            Body::Upload {
                part: 1,
                sealed: bytes(n),
                certificate: bytes(600),
                signature: bytes(72),
                expires: u64::MAX,
            },
            Body::Align {
                message: bytes(n),
                certificate: bytes(600),
                signature: bytes(72),
            },
        ]
        .into_iter()
        .zip(lens)
        {
            let mut f = Frame::new([0xFF; 16], u64::MAX, u64::MAX, Role::Party(u16::MAX), body);
            f.seq = u64::MAX;
            f.attempt = [0xFF; 8];
            let wire = encode(&f).unwrap();
            assert_eq!(
                wire.capacity(),
                96 + strings,
                "{n} bytes: {} encoded",
                wire.len()
            );
            assert_eq!(decode(&wire[4..]).unwrap(), f);
        }
    }
}
