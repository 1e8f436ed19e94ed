//! Fixed-point encoding at scale 2^32 and the plaintext reference arithmetic.
