//! The protocol against a plain set intersection, the common order, what the transcript
//! contains, the typed errors, and the codec's rejections.

use std::collections::{BTreeSet, VecDeque};

use curve25519_dalek::ristretto::CompressedRistretto;
use proptest::prelude::*;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_psi::hash_to_group::{hash_input, hash_to_group};
use vtwin_psi::message::HEADER_BYTES;
use vtwin_psi::{
    align, memory, AlignError, Alignment, DecodeError, InputError, Kind, Message, Party, PartyKeys,
    ProtocolError, SessionId,
};

fn ids(xs: &[u32]) -> Vec<Vec<u8>> {
    xs.iter()
        .map(|x| format!("person-{x:08}").into_bytes())
        .collect()
}

/// Runs the parties through the codec, delivering the queue front to back or back to
/// front, and returns every party's alignment and every encoded message.
fn drive(parties: &[Vec<Vec<u8>>], seed: u64, lifo: bool) -> (Vec<Alignment>, Vec<Vec<u8>>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let p = parties.len() as u16;
    let session = SessionId([7; 16]);
    let mut roles = Vec::new();
    let mut queue = VecDeque::new();
    for (i, ids) in parties.iter().enumerate() {
        let (party, m) =
            Party::start(i as u16, p, session, ids, PartyKeys::random(&mut rng)).expect("start");
        roles.push(party);
        queue.push_back(m.encode());
    }
    let mut transcript = Vec::new();
    loop {
        let next = if lifo {
            queue.pop_back()
        } else {
            queue.pop_front()
        };
        let Some(bytes) = next else { break };
        let m = Message::decode(&bytes).expect("decode");
        transcript.push(bytes);
        let to = usize::from(m.to);
        queue.extend(
            roles[to]
                .receive(m)
                .expect("receive")
                .iter()
                .map(Message::encode),
        );
    }
    let out = roles
        .into_iter()
        .map(|r| r.finish().expect("finish"))
        .collect();
    (out, transcript)
}

fn check_against_plain(parties: &[Vec<Vec<u8>>], out: &[Alignment]) {
    let sets: Vec<BTreeSet<&Vec<u8>>> = parties.iter().map(|p| p.iter().collect()).collect();
    let plain: BTreeSet<&Vec<u8>> = sets.iter().skip(1).fold(sets[0].clone(), |acc, s| {
        acc.intersection(s).copied().collect()
    });
    for (p, a) in out.iter().enumerate() {
        assert_eq!(a.rows.len(), plain.len(), "party {p}: size");
        let got: BTreeSet<&Vec<u8>> = a.rows.iter().map(|&r| &parties[p][r]).collect();
        assert_eq!(got, plain, "party {p}: members");
        // Same tags, same order, and row r is the same id at every party.
        assert_eq!(a.tags, out[0].tags);
        assert!(a.tags.windows(2).all(|w| w[0] < w[1]));
        for r in 0..a.rows.len() {
            assert_eq!(parties[p][a.rows[r]], parties[0][out[0].rows[r]]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn two_parties_match_plain_intersection(
        a in prop::collection::btree_set(0u32..60, 1..30),
        b in prop::collection::btree_set(0u32..60, 1..30),
        seed in any::<u64>(),
    ) {
        let common = a.intersection(&b).count();
        let parties = vec![ids(&a.into_iter().collect::<Vec<_>>()), ids(&b.into_iter().collect::<Vec<_>>())];
        let r = memory::run(SessionId([0; 16]), &parties, {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            vec![PartyKeys::random(&mut rng), PartyKeys::random(&mut rng)]
        });
        if common == 0 {
            prop_assert_eq!(r, Err(AlignError::EmptyIntersection));
        } else {
            let (out, _) = drive(&parties, seed, false);
            check_against_plain(&parties, &out);
        }
    }

    #[test]
    fn three_and_four_parties_match_plain_intersection(
        sets in prop::collection::vec(prop::collection::btree_set(0u32..24, 1..20), 3..5),
        seed in any::<u64>(),
        lifo in any::<bool>(),
    ) {
        let all: BTreeSet<u32> = sets.iter().skip(1).fold(sets[0].clone(), |a, s| &a & s);
        prop_assume!(!all.is_empty());
        let parties: Vec<Vec<Vec<u8>>> = sets
            .iter()
            .map(|s| {
                // Input order is not sorted order: reverse half of them.
                let mut v: Vec<u32> = s.iter().copied().collect();
                if seed % 2 == 0 { v.reverse(); }
                ids(&v)
            })
            .collect();
        let (out, _) = drive(&parties, seed, lifo);
        check_against_plain(&parties, &out);
        prop_assert_eq!(out[0].stats.rounds, 3 * parties.len() as u16);
    }
}

#[test]
fn transcript_holds_no_id_bytes_or_unkeyed_points() {
    let a: Vec<u32> = (0..40).collect();
    let b: Vec<u32> = (20..70).collect();
    let c: Vec<u32> = (10..50).rev().collect();
    for parties in [vec![ids(&a), ids(&b)], vec![ids(&a), ids(&b), ids(&c)]] {
        let (out, transcript) = drive(&parties, 5, false);
        assert_eq!(out[0].rows.len(), 20, "ids 20..40 are common");
        let total: u64 = out.iter().map(|a| a.stats.bytes_sent).sum();
        assert_eq!(
            total,
            transcript.iter().map(|m| m.len() as u64).sum::<u64>()
        );
        for id in parties.iter().flatten() {
            let forbidden = [
                id.clone(),
                hash_input(id).to_vec(),
                hash_to_group(id).compress().to_bytes().to_vec(),
            ];
            for m in &transcript {
                for f in &forbidden {
                    assert!(
                        !m.windows(f.len()).any(|w| w == f.as_slice()),
                        "message contains {f:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn two_party_traffic_is_two_sets_each_way() {
    let (out, transcript) = drive(&[ids(&[1, 2, 3]), ids(&[2, 3, 4, 5])], 9, false);
    assert_eq!(transcript.len(), 4);
    // Party 0 sends its 3 points, then party 1's 4 points raised.
    assert_eq!(
        out[0].stats.bytes_sent,
        (2 * HEADER_BYTES + 32 * (3 + 4)) as u64
    );
    assert_eq!(
        out[0].stats.bytes_received,
        (2 * HEADER_BYTES + 32 * (4 + 3)) as u64
    );
    assert_eq!(out[0].stats.rounds, 2);
}

#[test]
fn duplicate_and_empty_inputs_are_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let s = SessionId([0; 16]);
    let dup = ids(&[4, 9, 1, 9, 4]);
    let e = Party::start(0, 2, s, &dup, PartyKeys::random(&mut rng)).unwrap_err();
    assert_eq!(
        e,
        InputError::Duplicate {
            first: 1,
            second: 3
        }
    );
    // Several repeats: the pair whose later position comes first, named by its first two
    // occurrences.
    for (list, first, second) in [
        (vec![7, 3, 7, 7, 3], 0, 2),
        (vec![5, 6, 6, 5], 1, 2),
        (vec![1, 2, 1, 1], 0, 2),
    ] {
        let e = Party::start(0, 2, s, &ids(&list), PartyKeys::random(&mut rng)).unwrap_err();
        assert_eq!(e, InputError::Duplicate { first, second }, "{list:?}");
    }
    let none: Vec<Vec<u8>> = Vec::new();
    let e = Party::start(0, 2, s, &none, PartyKeys::random(&mut rng)).unwrap_err();
    assert_eq!(e, InputError::Empty);
    let e = Party::start(2, 2, s, &ids(&[1]), PartyKeys::random(&mut rng)).unwrap_err();
    assert_eq!(
        e,
        InputError::Parties {
            index: 2,
            parties: 2
        }
    );
    assert_eq!(
        align(&[ids(&[1, 2]), dup]),
        Err(AlignError::Input {
            party: 1,
            source: InputError::Duplicate {
                first: 1,
                second: 3
            }
        })
    );
    assert_eq!(align(&[ids(&[1, 2])]), Err(AlignError::Parties(1)));
}

#[test]
fn empty_intersection_is_an_error_for_every_party_count() {
    assert_eq!(
        align(&[ids(&[1, 2]), ids(&[3])]),
        Err(AlignError::EmptyIntersection)
    );
    assert_eq!(
        align(&[ids(&[1, 2]), ids(&[2, 3]), ids(&[3, 1])]),
        Err(AlignError::EmptyIntersection)
    );
}

fn first_message() -> (Party, Message, Party) {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let s = SessionId([1; 16]);
    let (a, ma) = Party::start(0, 2, s, &ids(&[1, 2, 3]), PartyKeys::random(&mut rng)).unwrap();
    let (b, _) = Party::start(1, 2, s, &ids(&[3, 4]), PartyKeys::random(&mut rng)).unwrap();
    (a, ma, b)
}

#[test]
fn codec_round_trips_and_rejects_malformed_bytes() {
    let (_, m, _) = first_message();
    let bytes = m.encode();
    assert_eq!(bytes.len(), m.encoded_len());
    assert_eq!(Message::decode(&bytes), Ok(m.clone()));
    let need = bytes.len() as u64;
    assert_eq!(
        Message::decode(&bytes[..bytes.len() - 1]),
        Err(DecodeError::Truncated {
            need,
            got: need - 1
        })
    );
    assert_eq!(
        Message::decode(&bytes[..10]),
        Err(DecodeError::Truncated {
            need: HEADER_BYTES as u64,
            got: 10
        })
    );
    let mut extra = bytes.clone();
    extra.push(0);
    assert_eq!(
        Message::decode(&extra),
        Err(DecodeError::Trailing { extra: 1 })
    );
    let mut v = bytes.clone();
    v[0] = 2;
    assert_eq!(Message::decode(&v), Err(DecodeError::Version(2)));
    let mut k = bytes.clone();
    k[1] = 9;
    assert_eq!(Message::decode(&k), Err(DecodeError::Kind(9)));
    let mut st = bytes.clone();
    st[1] = Kind::Filter as u8; // step 1 is a blinded set
    assert_eq!(
        Message::decode(&st),
        Err(DecodeError::Step { step: 1, kind: 2 })
    );
    let mut to_self = bytes.clone();
    to_self[22] = 0;
    assert!(matches!(
        Message::decode(&to_self),
        Err(DecodeError::Addressing { .. })
    ));
    // Non-canonical: s = p (≥ p), and an odd s.
    let mut p_enc = [0xffu8; 32];
    p_enc[0] = 0xed;
    p_enc[31] = 0x7f;
    let mut big = bytes.clone();
    big[HEADER_BYTES + 32..HEADER_BYTES + 64].copy_from_slice(&p_enc);
    assert_eq!(
        Message::decode(&big),
        Err(DecodeError::NonCanonicalPoint { position: 1 })
    );
    let mut odd = bytes.clone();
    odd[HEADER_BYTES] |= 1;
    assert_eq!(
        Message::decode(&odd),
        Err(DecodeError::NonCanonicalPoint { position: 0 })
    );
    // The step-1 set must be strictly increasing.
    let mut swapped = m.clone();
    swapped.points.swap(0, 1);
    assert_eq!(
        Message::decode(&swapped.encode()),
        Err(DecodeError::Unsorted { position: 1 })
    );
}

#[test]
fn party_rejects_foreign_repeated_and_invalid_messages() {
    let (_, ma, mut b) = first_message();
    let mut other = ma.clone();
    other.session = SessionId([2; 16]);
    assert_eq!(b.receive(other), Err(ProtocolError::Session));
    let mut wrong_sender = ma.clone();
    wrong_sender.kind = Kind::Blinded;
    wrong_sender.from = 1;
    wrong_sender.to = 1;
    assert!(matches!(
        b.receive(wrong_sender),
        Err(ProtocolError::Unexpected { .. })
    ));
    // An even, canonical s that is not a group element.
    let bad = (0u8..=254)
        .step_by(2)
        .map(|x| {
            let mut s = [0u8; 32];
            s[0] = x;
            s[1] = 1;
            s
        })
        .find(|s| CompressedRistretto(*s).decompress().is_none())
        .expect("a non-point");
    let mut invalid = ma.clone();
    invalid.points[2] = bad;
    assert_eq!(
        b.receive(invalid),
        Err(ProtocolError::InvalidPoint {
            step: 1,
            position: 2
        })
    );
    let (_, ma, mut b) = first_message();
    assert!(b.receive(ma.clone()).is_ok());
    assert_eq!(b.receive(ma), Err(ProtocolError::Duplicate { step: 1 }));
    assert_eq!(b.finish(), Err(ProtocolError::NotDone));
}

#[test]
fn party_counts_whose_last_step_overflows_are_refused() {
    // Found by the psi_message fuzz target: P = 65300 made 2P overflow the step field.
    let crash: [u8; 30] = [
        0x01, 0x01, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x14,
        0xff, 0x02, 0x00, 0x01, 0x00, 0x06, 0x00, 0, 0, 0, 0,
    ];
    assert!(matches!(
        Message::decode(&crash),
        Err(DecodeError::Addressing { .. })
    ));
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let big = vtwin_psi::MAX_PARTIES + 1;
    let e = Party::start(
        0,
        big,
        SessionId([0; 16]),
        &ids(&[1]),
        PartyKeys::random(&mut rng),
    );
    assert_eq!(
        e.unwrap_err(),
        InputError::Parties {
            index: 0,
            parties: big
        }
    );
    let (p, _) = Party::start(
        0,
        vtwin_psi::MAX_PARTIES,
        SessionId([0; 16]),
        &ids(&[1]),
        PartyKeys::random(&mut rng),
    )
    .unwrap();
    assert_eq!(p.stats().rounds, 3 * vtwin_psi::MAX_PARTIES);
}

/// Every id's tag H(x)·K under the keys `drive(.., seed, ..)` draws.
fn all_tags(parties: &[Vec<Vec<u8>>], seed: u64) -> BTreeSet<[u8; 32]> {
    use vtwin_psi::blind::{hash_and_blind, reblind};
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let keys: Vec<PartyKeys> = parties
        .iter()
        .map(|_| PartyKeys::random(&mut rng))
        .collect();
    let mut out = BTreeSet::new();
    for ids in parties {
        let mut t = hash_and_blind(ids, &keys[0].key);
        for k in &keys[1..] {
            t = reblind(&t, &k.key).unwrap();
        }
        out.extend(t);
    }
    out
}

#[test]
fn with_three_parties_no_blinded_set_carries_tags() {
    // The owner's one-time mask keeps every set it does not own pseudorandom to a party:
    // tags H(x)·K appear only in filters and the intersection. With two parties the
    // returned sets are tags by design (each party's output needs them).
    for (p, seed) in [(2usize, 21u64), (3, 22), (4, 23)] {
        let parties: Vec<Vec<Vec<u8>>> = (0..p as u32)
            .map(|q| ids(&(q..q + 12).collect::<Vec<_>>()))
            .collect();
        let tags = all_tags(&parties, seed);
        let (out, transcript) = drive(&parties, seed, false);
        assert!(
            out[0].tags.iter().all(|t| tags.contains(t)),
            "P = {p}: tags recomputed"
        );
        for bytes in &transcript {
            let m = Message::decode(bytes).unwrap();
            let tagged = m.points.iter().filter(|q| tags.contains(*q)).count();
            match (m.kind, p) {
                (Kind::Blinded, 2) if m.step == 2 => assert_eq!(tagged, m.points.len()),
                (Kind::Blinded, _) => assert_eq!(tagged, 0, "P = {p}, step {}", m.step),
                _ => assert_eq!(tagged, m.points.len()),
            }
        }
    }
}

#[test]
fn three_party_traffic_matches_the_documented_formula() {
    // protocols/psi.md, "Cost per party": 30 P + 32 Σ n_o for the blinding steps, a filter
    // of |X_0 ∩ … ∩ X_i| tags from party i ≤ P − 2, (P − 1)(30 + 32 |I|) from P − 1, and
    // P (30 + 4 |I|) of positions from everyone.
    let parties = vec![
        ids(&(0..10).collect::<Vec<_>>()),
        ids(&(5..20).collect::<Vec<_>>()),
        ids(&(8..30).rev().collect::<Vec<_>>()),
    ];
    let (out, transcript) = drive(&parties, 31, false);
    let blinding = 30 * 3 + 32 * (10 + 15 + 22) + 3 * (30 + 4 * 2);
    let sent: Vec<u64> = out.iter().map(|a| a.stats.bytes_sent).collect();
    assert_eq!(
        sent,
        [
            blinding + 30 + 32 * 10,
            blinding + 30 + 32 * 5,
            blinding + 2 * (30 + 32 * 2)
        ]
    );
    assert_eq!(out[2].rows.len(), 2);
    assert_eq!(transcript.len(), 3 * 3 + 2 + 2 + 3 * 3);
    let received: u64 = out.iter().map(|a| a.stats.bytes_received).sum();
    assert_eq!(received, sent.iter().sum::<u64>());
}

#[test]
fn positions_messages_round_trip_and_are_checked() {
    let m = Message {
        session: SessionId([3; 16]),
        parties: 3,
        from: 1,
        to: 0,
        kind: Kind::Positions,
        step: 7,
        points: Vec::new(),
        positions: vec![3, 1, 2],
    };
    let bytes = m.encode();
    assert_eq!(bytes.len(), HEADER_BYTES + 12);
    assert_eq!(Message::decode(&bytes), Ok(m));
    assert_eq!(
        Message::decode(&bytes[..bytes.len() - 1]),
        Err(DecodeError::Truncated { need: 42, got: 41 })
    );

    // A run of three in which the first positions message repeats a position.
    let parties = [ids(&[1, 2, 3, 4]), ids(&[2, 3, 4, 5]), ids(&[3, 4, 9])];
    let mut rng = ChaCha20Rng::seed_from_u64(41);
    let s = SessionId([4; 16]);
    let mut roles = Vec::new();
    let mut queue = VecDeque::new();
    for (i, ids) in parties.iter().enumerate() {
        let (party, m) = Party::start(i as u16, 3, s, ids, PartyKeys::random(&mut rng)).unwrap();
        roles.push(party);
        queue.push_back(m);
    }
    while let Some(mut m) = queue.pop_front() {
        let to = usize::from(m.to);
        if m.kind == Kind::Positions {
            assert_eq!(m.positions.len(), 2, "ids 3 and 4 are common");
            m.positions[1] = m.positions[0];
            assert_eq!(
                roles[to].receive(m),
                Err(ProtocolError::Positions { step: 7 })
            );
            return;
        }
        queue.extend(roles[to].receive(m).unwrap());
    }
    panic!("no positions message");
}

#[test]
fn the_largest_party_count_reaches_its_last_step_without_overflow() {
    // Found by the psi_message fuzz target: with P = 21845 the last step is 65535 and
    // "the step after it" overflowed u16 when party 1 took this empty step-1 set.
    let crash: [u8; 30] = [
        0x01, 0x01, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0x55, 0x55, 0x55, 0x54, 0x55, 0x00, 0x05, 0x55,
        0x55, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0, 0, 0, 0,
    ];
    let m = Message::decode(&crash).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let (mut one, _) = Party::start(
        1,
        m.parties,
        m.session,
        &ids(&[1]),
        PartyKeys::random(&mut rng),
    )
    .unwrap();
    assert_eq!(one.receive(m).unwrap().len(), 1);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let max = vtwin_psi::MAX_PARTIES;
    let s = SessionId([0; 16]);
    let (mut p, _) = Party::start(0, max, s, &ids(&[1]), PartyKeys::random(&mut rng)).unwrap();
    let last = Message {
        session: s,
        parties: max,
        from: 1,
        to: 0,
        kind: Kind::Positions,
        step: 3 * max,
        points: Vec::new(),
        positions: Vec::new(),
    };
    assert_eq!(Message::decode(&last.encode()), Ok(last.clone()));
    // Buffered (its step has not come), not a panic.
    assert_eq!(p.receive(last.clone()), Ok(Vec::new()));
    assert_eq!(
        p.receive(last),
        Err(ProtocolError::Duplicate { step: 3 * max })
    );
}
