"""An install without a C/C++ compiler: the compiled modules missing, neardup runs its Python and
numpy code and gives the same texts and stored signatures.

Each case runs in a fresh interpreter where importing `_textwalk`, `_words` or `_sketch` fails
(an import hook raises ImportError, as for a module that was never built), so the fallbacks
chosen at import time are the ones exercised.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.corpora import postgresql_pages
from tests.documents import ARTICLE

COMPILED = (
    "neardup_pipeline.text._textwalk",
    "neardup_pipeline.text._words",
    "neardup_pipeline.sketch._sketch",
)
SCRIPT = """
import json, sys
blocked = set(sys.argv[2].split(",")) if sys.argv[2] else set()

class NeverBuilt:
    def find_spec(self, name, path=None, target=None):
        if name in blocked:
            raise ImportError(f"{name} was not built")
        return None

sys.meta_path.insert(0, NeverBuilt())
from neardup_pipeline import NearDupConfig
from neardup_pipeline.text import extract, walk
from neardup_pipeline.methods import minhash
from neardup_pipeline.text import normalize
from neardup_pipeline.sketch import shingles
from neardup_pipeline.fingerprint import Document, Fingerprinter

compiled = [walk.textwalk is not None, normalize._word_tokens is not None,
            minhash._sketch is not None, shingles._sketch is not None, extract.NATIVE_WALK,
            extract.walk_in_use()]
fingerprinter = Fingerprinter(NearDupConfig(methods=("simhash", "minhash", "bag")))
pages = []
for path in json.loads(sys.argv[1]):
    fp = fingerprinter.fingerprint(Document(path, html=open(path, "rb").read()))
    pages.append({"text": fp.text, "title": fp.title, "signatures": fingerprinter.encode(fp)})
print(json.dumps({"compiled": compiled, "pages": pages}))
"""


def fingerprints(paths: list[Path], blocked: tuple[str, ...]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps([str(p) for p in paths]), ",".join(blocked)],
        capture_output=True, text=True, check=True, timeout=300,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_without_the_compiled_modules_the_same_texts_and_signatures(tmp_path: Path) -> None:
    paths = []
    for n, page in enumerate(postgresql_pages()[::78]):  # 20 pages of the sample
        paths.append(tmp_path / f"pg{n}.html")
        paths[-1].write_bytes(page.html)
    menu = "".join(f"<li><a href=/{i}>Section {i}</a></li>" for i in range(30))
    paths.append(tmp_path / "chrome.html")  # short page under a big menu: chrome fallbacks
    paths[-1].write_text(f"<html><body><ul>{menu}</ul><h1>Short</h1><p>{ARTICLE[:200]}</p>"
                         "</body></html>")

    compiled = fingerprints(paths, ())
    fallback = fingerprints(paths, COMPILED)
    assert compiled["compiled"][:5] == [True] * 5
    assert compiled["compiled"][5].endswith(" events (C++)")
    assert fallback["compiled"] == [False] * 5 + ["Python walk (compiled walk not built)"]
    assert fallback["pages"] == compiled["pages"]
    assert all(page["text"] for page in compiled["pages"])  # type: ignore[attr-defined]
