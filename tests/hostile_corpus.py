"""A hostile-input corpus (generated, seeded) and a measurer of time and peak memory per page.

`python -m tests.hostile_corpus` prints, per page, the seconds and the peak RSS growth of
fingerprinting it (each page in a forked child, so one page's peak never hides another's).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.documents import paragraphs_page

MB = 1024 * 1024


def _wrap(body: str) -> bytes:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head><body>"
            f"{body}</body></html>").encode()


_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "' + f"&lol{i - 1 if i > 1 else ''};" * 10 + '">' for i in range(1, 10)
    )
    + ']><html><body><p>&lol9; laughs entity expansion attempt</p></body></html>'
)


def pages() -> dict[str, Callable[[], bytes]]:
    """name -> a builder of the page's bytes (built on demand: some are 50 MB)."""
    words = "vacuum reclaims storage occupied by dead tuples in every table "
    return {
        "big-50mb": lambda: paragraphs_page(50 * MB, 50, "Big"),
        "long-token-1mb": lambda: _wrap("<p>" + words * 20 + "x" * MB + " " + words * 20 + "</p>"),
        "long-tokens-20x1mb": lambda: _wrap(" ".join("y" * MB for _ in range(20))),
        "tiny-tags-3m": lambda: _wrap("<b>a</b>" * 3_000_000),
        "unclosed-tags-3m": lambda: _wrap("<i>w " * 3_000_000),
        "attrs-flood": lambda: _wrap("<p " + " ".join(f"a{i}='{i}'" for i in range(200_000))
                                     + ">text</p>"),
        "invalid-utf8": lambda: (_wrap(words * 50)[:-20] + bytes(range(128, 256)) * 2000
                                 + b"\xff\xfe\xc0\xaf" * 10_000 + b"</body></html>"),
        "mixed-scripts": lambda: _wrap(
            ("Latin words and Кириллица текст and ελληνικά και 中文字符测试 and "
             "日本語のテキスト and 한국어 텍스트 and देवनागरी पाठ. ") * 2000),
        "rtl": lambda: _wrap(
            ("\u202eשלום עולם זהו טקסט בעברית\u202c "
             "\u200fمرحبا بالعالم هذا نص عربي\u200f ") * 2000),
        "nul-bytes": lambda: _wrap("vacuum\x00tuples\x00" * 100_000),
        "nul-only": lambda: b"\x00" * (5 * MB),
        "billion-laughs": lambda: _LAUGHS.encode(),
        "entity-flood": lambda: _wrap("&amp;&lt;&#x41;&#65;&nbsp;" * 1_000_000),
        "external-entity": lambda: (
            b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b"<html><body><p>&x; external entity attempt</p></body></html>"),
        "deep-nesting-200k": lambda: _wrap("<div>" * 200_000 + "deep words" + "</div>" * 200_000),
        "empty": lambda: b"",
        "whitespace-only": lambda: b" \n\t " * 1000,
        "comment-only": lambda: _wrap("<!--" + "c" * MB + "-->"),
        "script-50mb": lambda: _wrap("<script>" + "var a=1;" * (6 * MB) + "</script><p>hi</p>"),
    }


@dataclass(frozen=True)
class Measure:
    """What fingerprinting one page cost, and what came out."""

    name: str
    input_bytes: int
    seconds: float
    peak_mb: float  # peak RSS growth of the forked child over its parent at fork time
    status: str
    words: int
    truncated: bool
    error: str = ""


def measure(name: str, build: Callable[[], bytes], config: object = None) -> Measure:
    """Build and fingerprint one page in a forked child; time and peak memory from there."""
    from neardup_pipeline.config import NearDupConfig
    from neardup_pipeline.fingerprint import Document, Fingerprinter

    cfg = config if isinstance(config, NearDupConfig) else NearDupConfig()
    fingerprinter = Fingerprinter(cfg)
    fingerprinter.fingerprint(Document("warm", html=_wrap("warm up the words " * 10)))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: build, measure, report one JSON line, exit without cleanup
        try:
            os.close(read)
            base = _rss_mb()
            data = build()
            built = _maxrss_mb()
            started = time.perf_counter()
            try:
                fp = fingerprinter.fingerprint(Document(name, html=data))
                result = {"status": fp.status, "words": fp.word_count, "truncated": fp.truncated}
            except Exception as exc:  # reported, never hidden: the test asserts on it
                result = {"status": "error", "words": 0, "truncated": False, "error": repr(exc)}
            seconds = time.perf_counter() - started
            peak = max(_maxrss_mb() - max(built, base), 0.0)
            payload = {"name": name, "input_bytes": len(data), "seconds": seconds,
                       "peak_mb": peak, **result}
            os.write(write, json.dumps(payload).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return Measure(**json.loads(b"".join(chunks)))


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    names = sys.argv[1:] or list(pages())
    print(f"{'page':22} {'MB in':>7} {'seconds':>8} {'peak MB':>8} status   words  cut")
    for name in names:
        m = measure(name, pages()[name])
        print(f"{m.name:22} {m.input_bytes / MB:7.1f} {m.seconds:8.2f} {m.peak_mb:8.0f} "
              f"{m.status:8} {m.words:6} {m.truncated} {m.error}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
