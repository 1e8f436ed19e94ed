#!/usr/bin/env python3
"""Regenerates the PRG and zero-sharing parts of protocols/vectors/mpc-keys.json.

vtwin-mpc's PRG F(seed, stream, n) is the first 16 n bytes of the ChaCha12 keystream (RFC 8439
layout: 32-bit block counter from 0, 96-bit nonce = LE64(stream) || 0u32) under key `seed`,
read as n little-endian u128 words; node i's zero-sharing is F(k_i, c) - F(k_{i+1}, c) mod
2^128. This file computes both with its own ChaCha (no Rust code involved), after checking
that ChaCha at 20 rounds equals the `cryptography` package's ChaCha20 and reproduces the
ChaCha20 PRG outputs the file held before (pair seeds and keys are unchanged).

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
    for j, want in enumerate(old["prg"]["outputs_by_key"]):
        if old["prg"].get("cipher", "ChaCha20") == "ChaCha20":
            got = prg(seeds[j], old["prg"]["stream"], old["prg"]["n"], rounds=20)
            assert [hex(x) for x in got] == want, f"old ChaCha20 vector {j}"


def main():
    check = "--check" in sys.argv[1:]
    data = json.loads(PATH.read_text())
    self_check(data)
    seeds = [bytes.fromhex(k) for k in data["pair_seed_list"]]
    outs = [prg(s, STREAM, N) for s in seeds]
    prg_v = {
        "cipher": f"ChaCha{ROUNDS}",
        "stream": STREAM,
        "n": N,
        "outputs_by_key": [[hex(x) for x in o] for o in outs],
    }
    zero = [[hex((outs[i][t] - outs[(i + 1) % 3][t]) % (1 << 128)) for t in range(N)] for i in range(3)]
    if check:
        assert data["prg"] == prg_v and data["zero_sharing_by_node"] == zero, "vectors differ"
        print("mpc-keys.json PRG vectors match")
        return
    data["prg"] = prg_v
    data["zero_sharing_by_node"] = zero
    data["description"] = (
        "vtwin-mpc key agreement, pair seeds, PRG, zero-sharing and wire format "
        "(protocols/mpc-sharing.md). Generated independently of the Rust code with Python "
        "'cryptography' 48 (X25519) and hmac/hashlib (HKDF-SHA256, RFC 5869); the PRG (ChaCha12) "
        "and zero-sharing by crates/vtwin-mpc/tests/vectors/gen_prg_vectors.py, whose ChaCha is "
        "checked at 20 rounds against cryptography's ChaCha20. Replayed by "
        "crates/vtwin-mpc/src/keys.rs tests."
    )
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
