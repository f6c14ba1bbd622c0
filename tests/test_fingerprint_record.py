"""A staged fingerprint (hygiene/fingerprint_record.py) comes back bit for bit, for every method
a slice can fingerprint, and a record that is not one is refused rather than half-read."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.hygiene.fingerprint_record import from_record, params_digest, to_record
from tests.corpora import postgresql_pages


@pytest.mark.parametrize("methods", [("auto",), ("simhash", "minhash", "bag")])
def test_a_record_gives_back_the_very_fingerprint(methods: tuple[str, ...]) -> None:
    fingerprinter = Fingerprinter(NearDupConfig(methods=methods))
    page = postgresql_pages()[0]
    fp = fingerprinter.fingerprint(Document(page.doc_id, html=page.html, url="https://e.org/"))
    back = from_record(fingerprinter, json.loads(json.dumps(to_record(fingerprinter, fp))))
    assert dataclasses.replace(back, signatures={}) == dataclasses.replace(
        fp, signatures={}, text="")
    assert back.language == fp.language == "en"  # detected for the record, kept by it
    assert back.signatures.keys() == fp.signatures.keys()
    for name, signature in fp.signatures.items():
        got = back.signatures[name]
        assert type(got) is type(signature)
        if not dataclasses.is_dataclass(signature):
            assert got == signature
            continue
        for field in dataclasses.fields(signature):
            want, have = getattr(signature, field.name), getattr(got, field.name)
            if isinstance(want, np.ndarray):  # the bag's float32 weights too, not rounded
                assert have.dtype == want.dtype and np.array_equal(have, want), field.name
            else:
                assert have == want


def test_a_foreign_record_is_refused_and_settings_name_their_records() -> None:
    fingerprinter = Fingerprinter(NearDupConfig())
    page = postgresql_pages()[0]
    record = to_record(fingerprinter, fingerprinter.fingerprint(Document("a", html=page.html)))
    record["signatures"]["bag"]["arrays"]["weights"]["dtype"] = "|O"
    with pytest.raises(ValueError, match="not a numeric dtype"):
        from_record(fingerprinter, record)
    other = Fingerprinter(NearDupConfig().replace(simhash_k=2))
    assert params_digest(other) != params_digest(fingerprinter)
