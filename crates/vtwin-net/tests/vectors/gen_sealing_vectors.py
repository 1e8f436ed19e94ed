#!/usr/bin/env python3
"""Generates protocols/vectors/net-sealing.json independently of the Rust code.

Uses Python 'cryptography' (X25519, HKDF-SHA256, AES-256-GCM) and follows
protocols/sealing.md. Run from the repository root:
    python3 crates/vtwin-net/tests/vectors/gen_sealing_vectors.py > protocols/vectors/net-sealing.json
"""
import hashlib
import json
import struct

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SALT = b"vtwin-net/v2 seal salt"
INFO = b"vtwin-net/v2 seal"


def raw_public(private):
    return private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def det(label, n):
    """Deterministic test bytes (not secret): SHA-256 stream of a label."""
    out = b""
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(label.encode() + struct.pack("<I", counter)).digest()
        counter += 1
    return out[:n]


def case(name, session, iteration, party, node, plaintext, channel=None):
    """One blob; `channel` names the case whose node key and channel it reuses (a second
    blob on the same channel: the same E and shared secret, another salt)."""
    keys = channel or name
    node_secret = det(keys + "/node", 32)
    channel_secret = det(keys + "/channel", 32)
    salt = det(name + "/salt", 16)
    node_key = X25519PrivateKey.from_private_bytes(node_secret)
    channel_key = X25519PrivateKey.from_private_bytes(channel_secret)
    node_public = raw_public(node_key)
    channel_public = raw_public(channel_key)
    shared = channel_key.exchange(node_key.public_key())
    ctx = session + struct.pack("<QHB", iteration, party, node)
    key = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=SALT,
        info=INFO + ctx + channel_public + node_public + salt,
    ).derive(shared)
    body = AESGCM(key).encrypt(b"\x00" * 12, plaintext, ctx)
    return {
        "name": name,
        "node_secret": node_secret.hex(),
        "node_public": node_public.hex(),
        "channel_secret": channel_secret.hex(),
        "channel_public": channel_public.hex(),
        "salt": salt.hex(),
        "context": {"session": session.hex(), "iteration": iteration, "party": party, "node": node},
        "aad": ctx.hex(),
        "shared_secret": shared.hex(),
        "aes_key": key.hex(),
        "plaintext": plaintext.hex(),
        "sealed": (channel_public + salt + body).hex(),
    }


cases = [
    case("empty", bytes(16), 0, 0, 0, b""),
    case("short", bytes(range(16)), 7, 1, 2, b"shares of party 1 for node 2"),
    case("block-boundary", det("session", 16), 2**40 + 3, 65535, 1, det("pt32", 32)),
    case("long", det("session2", 16), 19999, 3, 0, det("pt1000", 1000)),
    case("short, second blob", bytes(range(16)), 7, 1, 2, b"shares of party 1 for node 2", "short"),
]
print(
    json.dumps(
        {
            "description": "vtwin-net input-share sealing (protocols/sealing.md, wire version 17): a channel's "
            "X25519 key E and the node's static key S, a 16-byte salt n per blob, "
            "HKDF-SHA256 (salt 'vtwin-net/v2 seal salt', info 'vtwin-net/v2 seal' || ctx || E || S || n), "
            "AES-256-GCM with nonce 0^96 and AAD ctx = session || iteration u64 LE || party u16 LE || node u8; "
            "blob = E || n || ciphertext || tag. "
            "Generated independently of the Rust code with Python 'cryptography' by "
            "crates/vtwin-net/tests/vectors/gen_sealing_vectors.py. Replayed by crates/vtwin-net/src/seal.rs tests.",
            "cases": cases,
        },
        indent=2,
    )
)
