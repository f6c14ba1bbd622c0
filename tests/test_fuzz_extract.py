"""Fuzz target for the HTML -> signature path (hypothesis), with a fixed budget for CI.

Any bytes or any markup-ish text: no exception, a status of "ok" or "no_text", and the same input
always gives the same signature. The budget is NEARDUP_FUZZ_EXAMPLES examples (default 300) of at
most 2 s each; a longer local run:
NEARDUP_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz_extract.py
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprinter

EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "300"))
FINGERPRINTER = Fingerprinter(
    NearDupConfig(methods=("simhash", "minhash")).replace(max_html_tags=50))

_TAGS = ["p", "div", "b", "script", "style", "title", "!--", "!DOCTYPE html", "?xml", "br",
         "svg", "template", "a href='x'", "table", "td", "![CDATA["]
_PIECES = st.one_of(
    st.sampled_from([f"<{t}>" for t in _TAGS] + [f"</{t}>" for t in _TAGS]),
    st.sampled_from(["&amp;", "&#0;", "&#x10FFFF;", "&lol;", "&#99999999;", "-->", "<", ">",
                     "\x00", "\u202e", "\ufeff", "\ud7ff", "<!ENTITY x 'y'>", "]]>"]),
    st.text(min_size=0, max_size=40),
)
_MARKUP = st.lists(_PIECES, max_size=60).map("".join)
_INPUT = st.one_of(_MARKUP, _MARKUP.map(lambda s: s.encode("utf-8", "surrogatepass")),
                   st.binary(max_size=2000))


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=2), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_INPUT)
def test_html_to_signature_never_fails(html: str | bytes) -> None:
    doc = Document("fuzz", html=html)
    fp = FINGERPRINTER.fingerprint(doc)
    assert fp.status in ("ok", "no_text", "not_html")
    again = FINGERPRINTER.fingerprint(doc)
    assert again.signatures.keys() == fp.signatures.keys()
    assert again.keys == fp.keys
