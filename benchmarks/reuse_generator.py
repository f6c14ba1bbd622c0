"""Seeded text-reuse suspects made from real texts (../shared/data), with their truth.

Sources: sections of real documents (the PostgreSQL 15.18 and 15.20 manuals, the Debian
installation guide in English, Russian and Catalan for 9 architectures, 4 American Tract
Society books, the New York 1850 code section), each cut at sentence ends into sections of
about `section_words` words. Hosts (the unrelated text a passage is put into): the 410 pages of
web-pages-multisite and sections of the book "Life of Rev. Richard Baxter", which no source
holds. Three books that print another whole are left out of both (LEFT_OUT_BOOKS).

Kinds, one passage or two (from two sources) of 20-100 words put into a host of 100-500 words
at a sentence end:
- verbatim: the passage as it is;
- deletions: 1-3 runs of 1-4 words cut out (at most a fifth of the passage);
- revision: one word in ten replaced by a synonym (the first sense of Princeton WordNet 3.0,
  read from Debian's wordnet-base files) and, where a sentence has a comma in its middle, its
  two clauses swapped (English passages only);
- negative: a host alone.
Every document and host is put in the `tune` or the `check` half by a hash of its id, and a
suspect takes its host and its sources from one half: thresholds are chosen on one, checked on
the other.

`make_pan_pairs` makes (suspect, source) pairs of PAN's obfuscation kinds from the same texts
(English sources only, sections of about 1,200 words): none; random (PAN's random operations,
a number of them the degree 0.1-0.5 times the word count: a word moved within three places,
deleted, inserted from the host, or replaced by a synonym); a stand-in for cyclic translation
(synonyms for a third of the content words, articles dropped, word pairs and clauses swapped);
summary (a third of the sentences of 150-700 words kept, in order, each shortened); negative.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from benchmarks.corpora import (
    SHARED_DATA,
    installation_guide_pages,
    multisite_pages,
    postgresql_pages,
)
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.text.normalize import stop_words_for

ATS_DIR = SHARED_DATA / "textreuse-ats-legal" / "inst" / "extdata"
WORDNET = Path("/usr/share/wordnet")
HOST_BOOK = "lifeofrevrichard00baxt"
# Books that hold another book whole (found by benchmarks/text_reuse.py's first part): the
# second edition of a source book, the volume that prints the host book, and the volume that
# prints a source book. Left out so that a found pair is one the generator made.
LEFT_OUT_BOOKS = ("remembermeorholy00palm", "calltounconv00baxt", "practicalthought00nev")
KINDS = ("verbatim", "deletions", "revision", "negative")

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Section:
    doc_id: str
    text: str
    language: str
    half: str


@dataclass(frozen=True)
class Inserted:
    """A passage put into a suspect: suspect text[start:end] comes from `source` text
    [source_start:source_end] (before its edits)."""

    source: str
    start: int
    end: int
    source_start: int
    source_end: int


@dataclass(frozen=True)
class Suspect:
    doc_id: str
    text: str
    kind: str
    half: str
    inserted: tuple[Inserted, ...] = field(default=())


def half_of(doc_id: str) -> str:
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=2).digest()
    return "tune" if digest[0] % 2 == 0 else "check"


def _sections(doc_id: str, text: str, language: str, words: int) -> Iterator[Section]:
    """`text` cut at sentence ends into pieces of at least `words` words (a last short one
    joins the one before)."""
    pieces: list[str] = []
    count = 0
    out: list[tuple[str, int]] = []
    for sentence in _SENTENCE_END.split(text):
        pieces.append(sentence)
        count += len(_WORD.findall(sentence))
        if count >= words:
            out.append((" ".join(pieces), count))
            pieces, count = [], 0
    if pieces:
        if out and count < words // 2:
            out[-1] = (out[-1][0] + " " + " ".join(pieces), out[-1][1] + count)
        else:
            out.append((" ".join(pieces), count))
    for n, (piece, _) in enumerate(out):
        section_id = f"{doc_id}#{n}"
        yield Section(section_id, piece, language, half_of(doc_id))


def _ats(name: str) -> str:
    return (ATS_DIR / "ats" / f"{name}.txt").read_text(encoding="utf-8", errors="replace")


def source_sections(section_words: int = 300) -> list[Section]:
    """Sections of every source document, in a fixed order."""
    if not ATS_DIR.is_dir():
        raise SystemExit(f"benchmarks need ../shared/data: missing {ATS_DIR}")
    extract = Fingerprinter()
    found: list[Section] = []
    for page in postgresql_pages():
        text = extract.text_of(Document(page.doc_id, html=page.html))[0]
        found.extend(_sections(f"pg/{page.doc_id}", text, "en", section_words))
    for page in installation_guide_pages():
        text = extract.text_of(Document(page.doc_id, html=page.html))[0]
        found.extend(_sections(f"guide/{page.doc_id}", text, page.info["lang"], section_words))
    for book in sorted(p.stem for p in (ATS_DIR / "ats").glob("*.txt")):
        if book != HOST_BOOK and book not in LEFT_OUT_BOOKS:
            found.extend(_sections(f"ats/{book}", _ats(book), "en", section_words))
    legal = (ATS_DIR / "legal" / "ny1850-match.txt").read_text(encoding="utf-8")
    found.extend(_sections("legal/ny1850-match", legal, "en", section_words))
    return [s for s in found if len(_WORD.findall(s.text)) >= 40]


def host_texts() -> list[Section]:
    """Unrelated real text that no source holds: web pages and the host book's sections."""
    extract = Fingerprinter()
    hosts = []
    for page in multisite_pages():
        text = extract.text_of(Document(page.doc_id, html=page.html))[0]
        if len(_WORD.findall(text)) >= 100:
            hosts.append(Section(f"web/{page.doc_id}", text, "", half_of(page.doc_id)))
    for section in _sections(f"ats/{HOST_BOOK}", _ats(HOST_BOOK), "en", 400):
        hosts.append(Section(section.doc_id, section.text, "en", half_of(section.doc_id)))
    return hosts


class WordNet:
    """Synonyms from Princeton WordNet 3.0's database files (wndb(5)): the other one-word
    lemmas of a word's first sense, noun, verb, adjective, then adverb."""

    POS = ("noun", "verb", "adj", "adv")

    def __init__(self, root: Path = WORDNET) -> None:
        if not (root / "index.noun").is_file():
            raise SystemExit(f"no WordNet at {root}: apt-get install wordnet-base")
        self._first: dict[str, list[tuple[str, int]]] = {}
        self._data = {pos: (root / f"data.{pos}").read_bytes() for pos in self.POS}
        for pos in self.POS:
            for line in (root / f"index.{pos}").read_text(encoding="utf-8").splitlines():
                if line.startswith(" "):
                    continue  # the licence header
                fields = line.split()
                pointers = int(fields[3])
                offset = int(fields[6 + pointers])  # after sense_cnt and tagsense_cnt
                self._first.setdefault(fields[0], []).append((pos, offset))

    def synonym(self, word: str, rng: random.Random) -> str | None:
        for pos, offset in self._first.get(word.lower(), []):
            data = self._data[pos]
            fields = data[offset : data.index(b"\n", offset)].decode("utf-8").split()
            lemmas = fields[4 : 4 + 2 * int(fields[3], 16) : 2]
            others = sorted({re.sub(r"\(.*\)$", "", w) for w in lemmas if "_" not in w
                             and "-" not in w and w.lower() != word.lower()})
            if others:
                return rng.choice(others)
        return None


def _word_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WORD.finditer(text)]


def _passage(section: Section, rng: random.Random) -> tuple[int, int]:
    """A run of 20-100 words of the section, starting at a sentence start where one fits."""
    return _run_of_words(section, rng.randint(20, 100), rng)


def _delete(passage: str, rng: random.Random) -> str:
    words = passage.split()
    budget = len(words) // 5
    for _ in range(rng.randint(1, 3)):
        run = min(rng.randint(1, 4), budget)
        if run <= 0 or len(words) - run <= 6:
            break
        at = rng.randint(3, len(words) - run - 3)
        del words[at : at + run]
        budget -= run
    return " ".join(words)


def _revise(passage: str, rng: random.Random, wordnet: WordNet) -> str:
    stops = stop_words_for("en")
    words = passage.split()
    eligible = [n for n, w in enumerate(words) if w.isalpha() and len(w) > 3
                and w.lower() not in stops and wordnet.synonym(w, rng) is not None]
    for n in rng.sample(eligible, min(len(eligible), max(1, len(words) // 10))):
        synonym = wordnet.synonym(words[n], rng) or words[n]
        words[n] = synonym.capitalize() if words[n][0].isupper() else synonym
    sentences = _SENTENCE_END.split(" ".join(words))
    swappable = [n for n, s in enumerate(sentences) if ", " in s[len(s) // 4 : -len(s) // 4]]
    if swappable:
        n = rng.choice(swappable)
        sentences[n] = _swap_clauses(sentences[n])
    return " ".join(sentences)


def make_suspects(sources: list[Section], hosts: list[Section], per_kind: int,
                  seed: int = 31) -> list[Suspect]:
    """`per_kind` suspects of each kind, half from each half of the data."""
    rng = random.Random(seed)
    wordnet = WordNet()
    suspects = []
    for half in ("tune", "check"):
        pool = [s for s in sources if s.half == half]
        english = [s for s in pool if s.language == "en"]
        host_pool = [h for h in hosts if h.half == half]
        for kind in KINDS:
            for n in range(per_kind // 2):
                text = _host_piece(host_pool, 500, rng)
                inserted: list[Inserted] = []
                if kind != "negative":
                    chosen = rng.sample(english if kind == "revision" else pool,
                                        rng.choice((1, 1, 2)))
                    for section in chosen:
                        start, end = _passage(section, rng)
                        passage = section.text[start:end]
                        if kind == "deletions":
                            passage = _delete(passage, rng)
                        elif kind == "revision":
                            passage = _revise(passage, rng, wordnet)
                        text, inserted = _insert(text, passage, inserted, rng)
                        inserted[-1] = Inserted(section.doc_id, inserted[-1].start,
                                                inserted[-1].end, start, end)
                suspects.append(Suspect(f"{half}/{kind}/{n}", text, kind, half,
                                        tuple(inserted)))
    return suspects


def _host_piece(hosts: list[Section], most: int, rng: random.Random) -> str:
    """100 to `most` running words of a host (all of it, if shorter)."""
    host = rng.choice(hosts)
    spans = _word_spans(host.text)
    length = min(rng.randint(100, most), len(spans))
    first = rng.randint(0, len(spans) - length)
    return host.text[spans[first][0] : spans[first + length - 1][1]]


def _insert(text: str, passage: str, inserted: list[Inserted],
            rng: random.Random) -> tuple[str, list[Inserted]]:
    """`passage` put at a sentence end of `text` outside the passages already there (their
    offsets moved along)."""
    taken = [(p.start, p.end) for p in inserted]
    ends = [m.end() for m in _SENTENCE_END.finditer(text)] or [len(text)]
    ends = [e for e in ends if not any(a < e < b for a, b in taken)] or [len(text)]
    at = rng.choice(ends)
    piece = passage + " "
    if at == len(text):
        piece = " " + passage
    moved = [Inserted(p.source, p.start + (len(piece) if p.start >= at else 0),
                      p.end + (len(piece) if p.start >= at else 0), p.source_start,
                      p.source_end) for p in inserted]
    start = at + (1 if at == len(text) else 0)
    return (text[:at] + piece + text[at:],
            [*moved, Inserted("", start, start + len(passage), 0, 0)])


@lru_cache(maxsize=1)
def wordnet() -> WordNet:
    return WordNet()


# PAN's obfuscation kinds (Potthast et al., PAN 2013 text alignment overview), made from the
# same real texts: each suspect is paired with one source, as in PAN's text alignment task.
PAN_KINDS = ("none", "random", "translation", "summary", "negative")


@dataclass(frozen=True)
class PanPair:
    """A (suspect, source) pair of one PAN kind; `cases` are the passages the suspect took
    from the source (none for `negative`)."""

    pair_id: str
    suspect: str
    source: str
    kind: str
    half: str
    cases: tuple[Inserted, ...]


def _run_of_words(section: Section, length: int, rng: random.Random) -> tuple[int, int]:
    """A run of `length` words of the section (all, if fewer), starting at a sentence start
    where one fits."""
    spans = _word_spans(section.text)
    length = min(length, len(spans))
    starts = [n for n in range(len(spans) - length + 1)
              if n == 0 or section.text[spans[n - 1][1] - 1] in ".!?;:"]
    first = rng.choice(starts or list(range(len(spans) - length + 1)))
    return spans[first][0], spans[first + length - 1][1]


def _log_uniform(low: int, high: int, rng: random.Random) -> int:
    return round(low * math.exp(math.log(high / low) * rng.random()))


def random_obfuscation(passage: str, degree: float, filler: list[str], rng: random.Random,
                       words_net: WordNet) -> str:
    """PAN's random obfuscation: `degree` times the word count of random operations, each a
    word moved within three places, deleted, inserted (a word of `filler`, the host), or
    replaced (by a synonym, else by a filler word)."""
    words = passage.split()
    for _ in range(round(degree * len(words))):
        if len(words) < 4:
            break
        at = rng.randrange(len(words))
        op = rng.choice(("shuffle", "delete", "insert", "replace"))
        if op == "shuffle":
            to = min(len(words) - 1, max(0, at + rng.choice((-3, -2, -1, 1, 2, 3))))
            words.insert(to, words.pop(at))
        elif op == "delete":
            del words[at]
        elif op == "insert":
            words.insert(at, rng.choice(filler))
        else:
            words[at] = words_net.synonym(words[at].strip(".,;:!?"), rng) or rng.choice(filler)
    return " ".join(words)


def _swap_clauses(sentence: str) -> str:
    """A sentence's two clauses around a comma in its middle, swapped; else as it is."""
    s = sentence
    if ", " not in s[len(s) // 4 : -len(s) // 4 or None]:
        return s
    middle = s.index(", ", len(s) // 4)
    end = s[-1] if s[-1] in ".!?;:" else ""
    first, second = s[:middle], s[middle + 2 : len(s) - len(end)]
    return f"{second[:1].upper()}{second[1:]}, {first[:1].lower()}{first[1:]}{end}"


_ARTICLES = frozenset({"the", "a", "an", "The", "A", "An"})


def translation_stand_in(passage: str, rng: random.Random, words_net: WordNet) -> str:
    """A stand-in for PAN's cyclic translation (English to another language and back): about a
    third of the content words replaced by a synonym, a quarter of the articles dropped, one
    word pair in twelve swapped, and half the sentences with a middle comma turned around."""
    stops = stop_words_for("en")
    words = passage.split()
    out: list[str] = []
    for w in words:
        bare = w.strip(".,;:!?")
        if w in _ARTICLES and rng.random() < 0.25:
            continue
        synonym = (words_net.synonym(bare, rng) if bare.isalpha() and len(bare) > 3
                   and bare.lower() not in stops and rng.random() < 0.35 else None)
        if synonym:
            synonym = synonym.capitalize() if bare[0].isupper() else synonym
            w = w.replace(bare, synonym)
        out.append(w)
    for n in range(len(out) - 1):
        if rng.random() < 1 / 12 and out[n][-1:].isalpha() and out[n + 1][-1:].isalpha():
            out[n], out[n + 1] = out[n + 1], out[n]
    sentences = _SENTENCE_END.split(" ".join(out))
    return " ".join(_swap_clauses(s) if rng.random() < 0.5 else s for s in sentences)


def summary_of(passage: str, rng: random.Random, words_net: WordNet) -> str:
    """A summary as sentence selection with compression: about a third of the sentences kept
    (two at least, in order), each cut after its last middle comma half the time, a tenth of
    its words deleted and a tenth replaced by a synonym."""
    sentences = [s for s in _SENTENCE_END.split(passage) if s.strip()]
    keep = sorted(rng.sample(range(len(sentences)),
                             max(min(2, len(sentences)), round(len(sentences) / 3))))
    out = []
    for n in keep:
        s = sentences[n]
        comma = s.rfind(", ", len(s) // 3)
        if comma > 0 and rng.random() < 0.5:
            s = s[:comma] + "."
        words = [w for w in s.split() if rng.random() >= 0.1] or s.split()
        words = [(words_net.synonym(w, rng) or w) if w.isalpha() and rng.random() < 0.1 else w
                 for w in words]
        out.append(" ".join(words))
    return " ".join(out)


def make_pan_pairs(sources: list[Section], hosts: list[Section], per_kind: int,
                   seed: int = 31, passage_words: tuple[int, int] = (40, 500),
                   summary_words: tuple[int, int] = (150, 700)) -> list[PanPair]:
    """`per_kind` pairs of each PAN kind, half from each half of the data. A suspect is 100 to
    800 words of a host with one passage (two for one pair in five) of one source put in at
    sentence ends; none, random (degree 0.1 to 0.5) and translation passages are
    `passage_words` (40 to 500) words of the source, a summary is made from `summary_words`
    (150 to 700) of it; a negative pairs a host with a source it holds nothing of. English
    sources only: the synonyms are English."""
    rng = random.Random(seed)
    words_net = wordnet()
    pairs = []
    for half in ("tune", "check"):
        pool = [s for s in sources if s.half == half and s.language == "en"]
        host_pool = [h for h in hosts if h.half == half]
        for kind in PAN_KINDS:
            for n in range(per_kind // 2):
                text = _host_piece(host_pool, 800, rng)
                filler = text.split()
                section = rng.choice(pool)
                inserted: list[Inserted] = []
                for _ in range(0 if kind == "negative" else rng.choice((1, 1, 1, 1, 2))):
                    taken = [(i.source_start, i.source_end) for i in inserted]
                    start, end = _run_of_words(section, _log_uniform(
                        *(summary_words if kind == "summary" else passage_words), rng), rng)
                    if any(a < end and start < b for a, b in taken):
                        continue
                    passage = section.text[start:end]
                    if kind == "random":
                        passage = random_obfuscation(passage, rng.uniform(0.1, 0.5), filler,
                                                     rng, words_net)
                    elif kind == "translation":
                        passage = translation_stand_in(passage, rng, words_net)
                    elif kind == "summary":
                        passage = summary_of(passage, rng, words_net)
                    text, inserted = _insert(text, passage, inserted, rng)
                    inserted[-1] = Inserted(section.doc_id, inserted[-1].start,
                                            inserted[-1].end, start, end)
                pairs.append(PanPair(f"{half}/{kind}/{n}", text, section.doc_id, kind, half,
                                     tuple(inserted)))
    return pairs
