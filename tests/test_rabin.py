"""Rabin fingerprints against an independent big-integer polynomial computation over GF(2)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from neardup_pipeline.sketch.rabin import DEFAULT_POLYNOMIAL, RabinHasher

P = (1 << 64) | DEFAULT_POLYNOMIAL


def poly_mod(value: int, modulus: int) -> int:
    """Remainder of polynomial division over GF(2), long division on Python integers."""
    degree = modulus.bit_length() - 1
    while value.bit_length() - 1 >= degree:
        value ^= modulus << (value.bit_length() - 1 - degree)
    return value


def poly_mulmod(a: int, b: int, modulus: int) -> int:
    product = 0
    while b:
        if b & 1:
            product ^= a
        a <<= 1
        b >>= 1
    return poly_mod(product, modulus)


def poly_gcd(a: int, b: int) -> int:
    while b:
        a, b = b, poly_mod(a, b)
    return a


def reference_fingerprint(data: bytes) -> int:
    """The message as one polynomial (MSB first), reduced modulo P."""
    return poly_mod(int.from_bytes(data, "big"), P) if data else 0


def test_polynomial_is_irreducible() -> None:
    # Rabin's test for degree n = 64 = 2^6 (only prime divisor 2):
    # x^(2^64) = x (mod P) and gcd(x^(2^32) - x, P) = 1.
    x = 0b10
    power = x
    for _ in range(32):
        power = poly_mulmod(power, power, P)
    assert poly_gcd(power ^ x, P) == 1
    for _ in range(32):
        power = poly_mulmod(power, power, P)
    assert power == x
    assert P.bit_length() - 1 == 64


def test_a_reducible_polynomial_fails_the_same_test() -> None:
    reducible = poly_mulmod(0b111, (1 << 62) | 0b11, 1 << 80)  # (x^2+x+1)(x^62+x+1), degree 64
    x = 0b10
    power = x
    for _ in range(64):
        power = poly_mulmod(power, power, reducible)
    half = x
    for _ in range(32):
        half = poly_mulmod(half, half, reducible)
    assert power != x or poly_gcd(half ^ x, reducible) != 1


@given(st.binary(max_size=300))
def test_fingerprint_matches_reference(data: bytes) -> None:
    assert RabinHasher().fingerprint(data) == reference_fingerprint(data)


def test_known_vectors_match_reference() -> None:
    hasher = RabinHasher()
    for text in [b"", b"a", b"abc", b"near-duplicate", "слово".encode(), bytes(range(256)) * 3]:
        assert hasher.fingerprint(text) == reference_fingerprint(text)


def test_extend64_is_the_fingerprint_of_the_concatenation() -> None:
    hasher = RabinHasher()
    rng = random.Random(7)
    prefixes = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40))) for _ in range(50)]
    values = [rng.getrandbits(64) for _ in range(50)]
    h = np.array([hasher.fingerprint(p) for p in prefixes], dtype=np.uint64)
    extended = hasher.extend64(h, np.array(values, dtype=np.uint64))
    for prefix, value, got in zip(prefixes, values, extended, strict=True):
        assert int(got) == reference_fingerprint(prefix + value.to_bytes(8, "big"))


def test_concatenation_property() -> None:
    # f(A || B) = f(A) * x^(8|B|) + f(B) mod P: the algebra the shingle combination relies on.
    a, b = b"first word", b"second"
    left = poly_mulmod(reference_fingerprint(a), 1 << (8 * len(b)), P)
    assert RabinHasher().fingerprint(a + b) == left ^ reference_fingerprint(b)
