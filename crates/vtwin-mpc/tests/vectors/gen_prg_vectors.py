#!/usr/bin/env python3
"""Regenerates the PRG and zero-sharing parts of protocols/vectors/mpc-keys.json.

vtwin-mpc's PRG F(seed, stream, n) is the first 16 n bytes of the ChaCha12 keystream (RFC 8439
layout: 32-bit block counter from 0, 96-bit nonce = LE64(stream) || 0u32) under key `seed`,
read as n little-endian u128 words; node i's zero-sharing is F(k_i, c) - F(k_{i+1}, c) mod
2^128 (XOR for binary sharings). This file computes them with its own ChaCha (no Rust code
involved), after checking it against two independent anchors: at 20 rounds the
`cryptography` package's ChaCha20 and the ChaCha20 PRG outputs this file held before
(`prg_chacha20_reference`, made with `cryptography`); at 12 rounds the ChaCha12 test vectors
of draft-strombergson-chacha-test-vectors-01 (TC1, TC2: two blocks each). Two vectors: `prg`
(stream 5, 9 elements: three blocks) and `prg_long` (stream 0x0123456789abcdef, which fills
both nonce words, 41 elements: 656 bytes, so the 4-block batches of SIMD backends, single
blocks and a partial block are all covered).

    python3 crates/vtwin-mpc/tests/vectors/gen_prg_vectors.py [--check]
"""
import json
import struct
import sys
from pathlib import Path

MASK = 0xFFFFFFFF
PATH = Path(__file__).resolve().parents[4] / "protocols" / "vectors" / "mpc-keys.json"
ROUNDS = 12
STREAM = 5
N = 9  # 144 bytes: three 64-byte blocks, so the block counter is exercised
LONG_STREAM = 0x0123456789ABCDEF
LONG_N = 41

# draft-strombergson-chacha-test-vectors-01, 256-bit key, 12 rounds, zero IV: the first two
# blocks as little-endian u128 words. TC1: all-zero key; TC2: key byte 0 = 1.
STROMBERGSON_12 = {
    bytes(32): [
        0xD583265F12CE1F8153F955076A9AF49B, 0x5F15AE2EA589007E1474E049BBC32904,
        0x798CFAAC3428E82CC0E37AD279F86405, 0xBE2613412FE80B611969DEA02C9F623A,
        0x3D17E08C3371FC86FE743E204188D50B, 0xB489C04C21851515CCCBBD19B7EB28C6,
        0x43C88C1B97B802C611F14CA1CD8D2542, 0x1693E617B0A64427C0515190CA461EE9,
    ],
    bytes([1]) + bytes(31): [
        0x09A225CDF090F0EEF6B0565D596E0512, 0x10DD4D0BFF1802930F5D5290278C2449,
        0xFEFDFE067D7A109EE254A4D9392200A6, 0xC029DC60C972179BF2F944A0EB0F21F0,
        0x2A37692AB05E660E2404C6CBC566730C, 0xC8A72980B8C4C72A0978BB6FB279F97A,
        0xAF15BA8E302E43907DFCBB17C23B5154, 0xA9177125BAAFE601560D10EF48EB5AC6,
    ],
}


def rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & MASK


def quarter(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & MASK; s[d] = rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & MASK; s[b] = rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & MASK; s[d] = rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & MASK; s[b] = rotl(s[b] ^ s[c], 7)


def block(key, counter, nonce, rounds):
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    state += list(struct.unpack("<8I", key)) + [counter] + list(struct.unpack("<3I", nonce))
    w = state[:]
    for _ in range(rounds // 2):
        quarter(w, 0, 4, 8, 12); quarter(w, 1, 5, 9, 13)
        quarter(w, 2, 6, 10, 14); quarter(w, 3, 7, 11, 15)
        quarter(w, 0, 5, 10, 15); quarter(w, 1, 6, 11, 12)
        quarter(w, 2, 7, 8, 13); quarter(w, 3, 4, 9, 14)
    return struct.pack("<16I", *[(w[i] + state[i]) & MASK for i in range(16)])


def keystream(key, nonce, nbytes, rounds):
    out = b"".join(block(key, c, nonce, rounds) for c in range((nbytes + 63) // 64))
    return out[:nbytes]


def prg(seed, stream, n, rounds=ROUNDS):
    nonce = struct.pack("<Q", stream) + b"\0\0\0\0"
    ks = keystream(seed, nonce, 16 * n, rounds)
    return [int.from_bytes(ks[16 * t:16 * t + 16], "little") for t in range(n)]


def self_check(old):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    ours = keystream(key, nonce, 200, 20)
    # cryptography's ChaCha20 takes a 16-byte nonce: LE32 counter || 96-bit nonce.
    enc = Cipher(algorithms.ChaCha20(key, b"\0\0\0\0" + nonce), mode=None).encryptor()
    assert ours == enc.update(bytes(200)), "ChaCha20 differs from cryptography's"
    seeds = [bytes.fromhex(k) for k in old["pair_seed_list"]]
    ref = old["prg_chacha20_reference"]
    for j, want in enumerate(ref["outputs_by_key"]):
        got = prg(seeds[j], ref["stream"], ref["n"], rounds=20)
        assert [hex(x) for x in got] == want, f"ChaCha20 reference vector {j}"
    for key, want in STROMBERGSON_12.items():
        # Zero IV and counters below 2^32: the IETF and the original layouts agree.
        assert prg(key, 0, 8, rounds=12) == want, "ChaCha12 test vector"


def main():
    check = "--check" in sys.argv[1:]
    data = json.loads(PATH.read_text())
    self_check(data)
    seeds = [bytes.fromhex(k) for k in data["pair_seed_list"]]

    def vector(stream, n):
        outs = [prg(s, stream, n) for s in seeds]
        v = {
            "cipher": f"ChaCha{ROUNDS}",
            "stream": stream,
            "n": n,
            "outputs_by_key": [[hex(x) for x in o] for o in outs],
        }
        return v, outs

    prg_v, outs = vector(STREAM, N)
    long_v, long_outs = vector(LONG_STREAM, LONG_N)
    zero = [[hex((outs[i][t] - outs[(i + 1) % 3][t]) % (1 << 128)) for t in range(N)] for i in range(3)]
    xor_zero = [
        [hex(long_outs[i][t] ^ long_outs[(i + 1) % 3][t]) for t in range(LONG_N)] for i in range(3)
    ]
    new = {
        "prg": prg_v,
        "zero_sharing_by_node": zero,
        "prg_long": long_v,
        "xor_zero_sharing_by_node": xor_zero,
    }
    if check:
        assert all(data.get(k) == v for k, v in new.items()), "vectors differ"
        print("mpc-keys.json PRG vectors match")
        return
    data.update(new)
    data["description"] = (
        "vtwin-mpc key agreement, pair seeds, PRG, zero-sharing and wire format "
        "(protocols/mpc-sharing.md). Generated independently of the Rust code with Python "
        "'cryptography' 48 (X25519) and hmac/hashlib (HKDF-SHA256, RFC 5869); the PRG (ChaCha12) "
        "and zero-sharings (additive for `prg`, XOR for `prg_long`) by "
        "crates/vtwin-mpc/tests/vectors/gen_prg_vectors.py, whose ChaCha is checked at 20 rounds "
        "against cryptography's ChaCha20 and `prg_chacha20_reference`, and at 12 rounds against "
        "the Strombergson ChaCha12 test vectors. Replayed by "
        "crates/vtwin-mpc/src/keys.rs tests."
    )
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
