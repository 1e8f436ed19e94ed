#!/usr/bin/env python3
"""Regenerates the PRG and zero-sharing parts of protocols/vectors/mpc-keys.json.

vtwin-mpc's PRG F(seed, stream, n) is the first 16 n bytes of the AES-128-CTR keystream under
key seed[:16], initial counter block LE64(stream) || 0u64 incremented as one 128-bit
big-endian integer (NIST SP 800-38A), read as n little-endian u128 words; node i's
zero-sharing is F(k_i, c) - F(k_{i+1}, c) mod 2^128 (XOR for binary sharings). This file
computes them with the `cryptography` package's AES in CTR mode (no Rust code involved), after
checking that package against the NIST SP 800-38A F.5.1 CTR-AES128 example (four blocks). Two
vectors: `prg` (stream 5, 9 elements) and `prg_long` (stream 0x0123456789abcdef, which fills
the stream word, 41 elements: 656 bytes, five 8-block batches of the AES-NI backend and a
single tail block).

    python3 crates/vtwin-mpc/tests/vectors/gen_prg_vectors.py [--check]
"""
import json
import struct
import sys
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

PATH = Path(__file__).resolve().parents[4] / "protocols" / "vectors" / "mpc-keys.json"
STREAM = 5
N = 9
LONG_STREAM = 0x0123456789ABCDEF
LONG_N = 41

# NIST SP 800-38A, F.5.1 CTR-AES128.Encrypt.
SP800_38A_KEY = "2b7e151628aed2a6abf7158809cf4f3c"
SP800_38A_COUNTER = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
SP800_38A_PLAIN = (
    "6bc1bee22e409f96e93d7e117393172a" "ae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52ef" "f69f2445df4f9b17ad2b417be66c3710"
)
SP800_38A_CIPHER = (
    "874d6191b620e3261bef6864990db6ce" "9806f66b7970fdff8617187bb9fffdff"
    "5ae4df3edbd5d35e5b4f09020db03eab" "1e031dda2fbe03d1792170a0f3009cee"
)


def aes_ctr(key, counter, data):
    enc = Cipher(algorithms.AES(key), modes.CTR(counter)).encryptor()
    return enc.update(data) + enc.finalize()


def prg(seed, stream, n):
    ks = aes_ctr(seed[:16], struct.pack("<Q", stream) + bytes(8), bytes(16 * n))
    return [int.from_bytes(ks[16 * t:16 * t + 16], "little") for t in range(n)]


def self_check():
    got = aes_ctr(
        bytes.fromhex(SP800_38A_KEY),
        bytes.fromhex(SP800_38A_COUNTER),
        bytes.fromhex(SP800_38A_PLAIN),
    )
    assert got.hex() == SP800_38A_CIPHER, "cryptography's AES-CTR differs from SP 800-38A F.5.1"


def main():
    check = "--check" in sys.argv[1:]
    data = json.loads(PATH.read_text())
    self_check()
    seeds = [bytes.fromhex(k) for k in data["pair_seed_list"]]

    def vector(stream, n):
        outs = [prg(s, stream, n) for s in seeds]
        v = {
            "cipher": "AES-128-CTR",
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
    data.pop("prg_chacha20_reference", None)
    data["description"] = (
        "vtwin-mpc key agreement, pair seeds, PRG, zero-sharing and wire format "
        "(protocols/mpc-sharing.md). Generated independently of the Rust code with Python "
        "'cryptography' 48 (X25519) and hmac/hashlib (HKDF-SHA256, RFC 5869); the PRG "
        "(AES-128-CTR) and zero-sharings (additive for `prg`, XOR for `prg_long`) by "
        "crates/vtwin-mpc/tests/vectors/gen_prg_vectors.py with cryptography's AES-CTR, "
        "checked against NIST SP 800-38A F.5.1. Replayed by crates/vtwin-mpc/src/keys.rs tests."
    )
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
