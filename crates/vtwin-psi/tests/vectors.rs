//! Replays `tests/vectors/psi.json` (libsodium and Python hashlib, by
//! `tests/vectors/gen_psi_vectors.py`) byte for byte: hash inputs, hash-to-group points,
//! scalar encodings, blinded and doubly blinded points, a party's step-1 message, and the
//! common order with every party's rows for two and three parties.

use serde_json::Value;
use vtwin_psi::blind::{hash_and_blind, reblind};
use vtwin_psi::hash_to_group::{hash_input, hash_to_group, DOMAIN_TAG};
use vtwin_psi::{memory, BlindingKey, Party, PartyKeys, SessionId};

fn vectors() -> Value {
    serde_json::from_str(include_str!("vectors/psi.json")).expect("psi.json")
}

fn hex(s: &Value) -> Vec<u8> {
    let s = s.as_str().expect("hex string");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn hex32(s: &Value) -> [u8; 32] {
    hex(s).try_into().expect("32 bytes")
}

fn list(v: &Value) -> Vec<Vec<u8>> {
    v.as_array().expect("list").iter().map(hex).collect()
}

fn key(v: &Value) -> BlindingKey {
    BlindingKey::from_canonical_bytes(hex32(v)).expect("canonical scalar")
}

fn keys(v: &Value, party: &str) -> PartyKeys {
    PartyKeys {
        key: key(&v["keys"][party]),
        mask: key(&v["masks"][party]),
    }
}

fn rows(v: &Value) -> Vec<Vec<usize>> {
    serde_json::from_value(v.clone()).expect("rows")
}

#[test]
fn domain_tag_matches() {
    assert_eq!(hex(&vectors()["domain_tag"]), DOMAIN_TAG);
}

#[test]
fn hash_to_group_matches_libsodium() {
    let v = vectors();
    let cases = v["hash_to_group"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for c in cases {
        let id = hex(&c["id"]);
        assert_eq!(
            hash_input(&id).to_vec(),
            hex(&c["input"]),
            "input of {id:?}"
        );
        assert_eq!(
            hash_to_group(&id).compress().to_bytes(),
            hex32(&c["point"]),
            "point of {id:?}"
        );
    }
}

#[test]
fn scalar_encoding_matches_libsodium() {
    let v = vectors();
    for p in ["a", "b", "c"] {
        let bytes = hex32(&v["keys"][p]);
        // libsodium's reduced little-endian encoding is read as is and written back.
        assert_eq!(*key(&v["keys"][p]).to_bytes(), bytes);
    }
    // An unreduced encoding (ℓ itself) is refused.
    let mut ell = [0u8; 32];
    ell[..16].copy_from_slice(&0x14def9dea2f79cd65812631a5cf5d3edu128.to_le_bytes());
    ell[31] = 0x10;
    assert!(BlindingKey::from_canonical_bytes(ell).is_none());
}

#[test]
fn blinding_matches_libsodium() {
    let v = vectors();
    let ids = list(&v["ids"]["a"]);
    let blinded = hash_and_blind(&ids, &key(&v["keys"]["a"]));
    assert_eq!(
        blinded.iter().map(|p| p.to_vec()).collect::<Vec<_>>(),
        list(&v["blinded_a"])
    );
    let doubly = reblind(&blinded, &key(&v["keys"]["b"])).unwrap();
    assert_eq!(
        doubly.iter().map(|p| p.to_vec()).collect::<Vec<_>>(),
        list(&v["doubly_blinded_a"])
    );
}

#[test]
fn step1_message_matches_libsodium() {
    let v = vectors();
    let ids = list(&v["ids"]["a"]);
    let (_, m) = Party::start(0, 2, SessionId([0; 16]), &ids, keys(&v, "a")).unwrap();
    assert_eq!(
        m.points.iter().map(|p| p.to_vec()).collect::<Vec<_>>(),
        list(&v["step1_a"])
    );
}

#[test]
fn two_party_order_matches_libsodium() {
    let v = vectors();
    let parties = [list(&v["ids"]["a"]), list(&v["ids"]["b"])];
    let out = memory::run(
        SessionId([1; 16]),
        &parties,
        vec![keys(&v, "a"), keys(&v, "b")],
    )
    .unwrap();
    assert_eq!(out.rows, rows(&v["two_party"]["rows"]));
    assert_eq!(
        out.len(),
        v["two_party"]["common_order"].as_array().unwrap().len()
    );
}

#[test]
fn three_party_order_matches_libsodium() {
    let v = vectors();
    let parties = [
        list(&v["ids"]["a"]),
        list(&v["ids"]["b"]),
        list(&v["ids"]["c"]),
    ];
    let k = vec![keys(&v, "a"), keys(&v, "b"), keys(&v, "c")];
    let out = memory::run(SessionId([2; 16]), &parties, k).unwrap();
    assert_eq!(out.rows, rows(&v["three_party"]["rows"]));
    assert_eq!(out.len(), 4, "ids 4..=7 are common to the three");
}
