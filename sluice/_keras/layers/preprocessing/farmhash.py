"""FarmHash's `Fingerprint64` (farmhashna `Hash64`) of short byte strings, the hash behind TF's
`strings.to_hash_bucket_fast`, which Keras's `Hashing` applies to the decimal text of integer
inputs. Only strings of up to 32 bytes are covered (every int64's text is at most 20).

Arithmetic is modulo 2**64 on Python ints. With k0, k1, k2 FarmHash's constants, rotations
right, `shift_mix(v) = v ^ (v >> 47)` and

    hash_len_16(u, v, m) = let a = shift_mix((u ^ v) * m), b = shift_mix((v ^ a) * m) in b * m

a string s of n bytes hashes by its length: 0 gives k2; 1-3 mix the first, middle and last
byte; 4-7 mix the first and last 32-bit words; 8-16 the first and last 64-bit words; 17-32 four
64-bit words (the first two and the last two), each as FarmHash writes it.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F


def _word(s: bytes, i: int, size: int) -> int:
    return int.from_bytes(s[i : i + size], "little")


def _rotate(v: int, shift: int) -> int:
    return ((v >> shift) | (v << (64 - shift))) & _MASK if shift else v


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len_16(u: int, v: int, mul: int) -> int:
    a = _shift_mix(((u ^ v) * mul) & _MASK)
    b = _shift_mix(((v ^ a) * mul) & _MASK)
    return (b * mul) & _MASK


def _len_0_to_16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = K2 + 2 * n
        a = (_word(s, 0, 8) + K2) & _MASK
        b = _word(s, n - 8, 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len_16(c, d, mul)
    if n >= 4:
        mul = K2 + 2 * n
        return _hash_len_16(n + (_word(s, 0, 4) << 3), _word(s, n - 4, 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * K2) ^ (z * K0)) & _MASK) * K2) & _MASK
    return K2


def _len_17_to_32(s: bytes) -> int:
    n = len(s)
    mul = K2 + 2 * n
    a = (_word(s, 0, 8) * K1) & _MASK
    b = _word(s, 8, 8)
    c = (_word(s, n - 8, 8) * mul) & _MASK
    d = (_word(s, n - 16, 8) * K2) & _MASK
    u = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    v = (a + _rotate((b + K2) & _MASK, 18) + c) & _MASK
    return _hash_len_16(u, v, mul)


def fingerprint64(s: bytes) -> int:
    """FarmHash's Fingerprint64 of `s` (at most 32 bytes), an unsigned 64-bit int.

    Raises:
      ValueError: a string longer than 32 bytes.

    >>> [fingerprint64(c) % 3 for c in (b"A", b"B", b"C", b"D", b"E")]  # Keras's example
    [1, 0, 1, 1, 2]
    """
    if len(s) <= 16:
        return _len_0_to_16(s)
    if len(s) <= 32:
        return _len_17_to_32(s)
    raise ValueError(f"fingerprint64 covers strings of up to 32 bytes, got {len(s)}.")
