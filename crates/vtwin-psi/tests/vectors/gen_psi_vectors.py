"""Independent test vectors for vtwin-psi (crates/vtwin-psi/tests/vectors/psi.json).

Everything here is computed by libsodium (ristretto255 hash-to-group and scalar
multiplication, scalar reduction) and Python's hashlib (SHA-512), not by vtwin-psi.
PyNaCl (1.6.2, the newest release) does not bind libsodium's ristretto255 functions, so
this script calls them in the libsodium shared library through ctypes: PyNaCl's own
nacl.bindings.crypto_core_ristretto255_from_hash is used instead when a PyNaCl version
provides it.

usage: python gen_psi_vectors.py > psi.json   (libsodium >= 1.0.18)
"""
import ctypes
import ctypes.util
import hashlib
import json
import sys

DOMAIN_TAG = b"vtwin-psi/v1/hash-to-group"
ELL = 2**252 + 27742317777372353535851937790883648493

try:
    from nacl import bindings as _nb

    _from_hash = getattr(_nb, "crypto_core_ristretto255_from_hash", None)
except ImportError:  # PyNaCl absent: libsodium alone
    _from_hash = None

_lib = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
assert _lib.sodium_init() >= 0
_lib.sodium_version_string.restype = ctypes.c_char_p
LIBSODIUM = _lib.sodium_version_string().decode()


def hash_input(ident: bytes) -> bytes:
    """SHA-512(tag || LE64(len) || id): the 64-byte input of the one-way map."""
    return hashlib.sha512(DOMAIN_TAG + len(ident).to_bytes(8, "little") + ident).digest()


def from_hash(h: bytes) -> bytes:
    if _from_hash is not None:
        return _from_hash(h)
    out = ctypes.create_string_buffer(32)
    assert _lib.crypto_core_ristretto255_from_hash(out, h) == 0
    return out.raw


def scalarmult(k: bytes, p: bytes) -> bytes:
    out = ctypes.create_string_buffer(32)
    assert _lib.crypto_scalarmult_ristretto255(out, k, p) == 0
    return out.raw


def scalar(label: str) -> bytes:
    """A fixed scalar: SHA-512(label) reduced mod l by libsodium, checked against Python ints
    (little-endian, fully reduced: the encoding vtwin-psi reads)."""
    wide = hashlib.sha512(label.encode()).digest()
    out = ctypes.create_string_buffer(32)
    _lib.crypto_core_ristretto255_scalar_reduce(out, wide)
    s = out.raw
    assert int.from_bytes(s, "little") == int.from_bytes(wide, "little") % ELL
    assert int.from_bytes(s, "little") < ELL
    return s


def mul_all(ks, p: bytes) -> bytes:
    for k in ks:
        p = scalarmult(k, p)
    return p


def party(ids, key):
    """A party's step-1 message of a two-party run: H(x)·k sorted by encoding."""
    return sorted(scalarmult(key, from_hash(hash_input(i))) for i in ids)


def run(parties, keys):
    """Common order (intersection tags H(x)·K sorted) and each party's rows."""
    tags = [{mul_all(keys, from_hash(hash_input(i))): n for n, i in enumerate(ids)} for ids in parties]
    common = sorted(set.intersection(*(set(t) for t in tags)))
    return common, [[t[c] for c in common] for t in tags]


ids = [b"", b"a", b"id0", b"id1", "Zoë Ñ".encode(), bytes(range(40))]
hashes = [
    {
        "id": i.hex(),
        "input": hash_input(i).hex(),
        "point": from_hash(hash_input(i)).hex(),
    }
    for i in ids
]

ka, kb, kc = scalar("vtwin-psi vector key A"), scalar("vtwin-psi vector key B"), scalar("vtwin-psi vector key C")
ma, mb, mc = scalar("vtwin-psi vector mask A"), scalar("vtwin-psi vector mask B"), scalar("vtwin-psi vector mask C")
a_ids = [f"id{i}".encode() for i in range(0, 8)]
b_ids = [f"id{i}".encode() for i in range(13, 3, -1)]
c_ids = [f"id{i}".encode() for i in (5, 99, 2, 6, 7, 4)]

two_common, two_rows = run([a_ids, b_ids], [ka, kb])
three_common, three_rows = run([a_ids, b_ids, c_ids], [ka, kb, kc])
blinded_a = [scalarmult(ka, from_hash(hash_input(i))) for i in a_ids]

vectors = {
    "provenance": f"libsodium {LIBSODIUM} (crypto_core_ristretto255_from_hash, crypto_scalarmult_ristretto255, "
    "crypto_core_ristretto255_scalar_reduce) and Python hashlib SHA-512, by gen_psi_vectors.py",
    "domain_tag": DOMAIN_TAG.hex(),
    "hash_to_group": hashes,
    "keys": {"a": ka.hex(), "b": kb.hex(), "c": kc.hex()},
    "masks": {"a": ma.hex(), "b": mb.hex(), "c": mc.hex()},
    "ids": {"a": [i.hex() for i in a_ids], "b": [i.hex() for i in b_ids], "c": [i.hex() for i in c_ids]},
    "blinded_a": [p.hex() for p in blinded_a],
    "doubly_blinded_a": [scalarmult(kb, p).hex() for p in blinded_a],
    "step1_a": [p.hex() for p in party(a_ids, ka)],
    "two_party": {"common_order": [t.hex() for t in two_common], "rows": two_rows},
    "three_party": {"common_order": [t.hex() for t in three_common], "rows": three_rows},
}
json.dump(vectors, sys.stdout, indent=1)
sys.stdout.write("\n")
