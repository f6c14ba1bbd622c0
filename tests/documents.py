"""Sample documents the tests share: a real-looking article, seeded random texts with edited
copies, and generated pages. Seeded everywhere, so every run sees the same bytes."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator

from neardup_pipeline.fingerprint import Document

ARTICLE = (
    "Near-duplicate detection finds pages whose visible content is almost the same although "
    "their bytes differ: the same article syndicated under other site chrome, a page served "
    "with a session identifier, a printer-friendly copy, or a mirror that adds its own banner. "
    "Search engines discard such copies so that results stay diverse and the index stays small. "
    "Charikar's simhash maps a document to a short fingerprint such that similar documents get "
    "fingerprints that differ in few bits, and Manku and colleagues showed how to look up every "
    "fingerprint within a small Hamming distance among billions by splitting it into blocks. "
) * 3


def random_text(seed: int, words: int = 300) -> str:
    """`words` words drawn from 63 place-like names: unrelated seeds give unrelated texts."""
    rng = random.Random(seed)
    vocab = [
        f"{a}{b}"
        for a in ("alpha", "bravo", "delta", "gamma", "kilo", "lima", "oscar")
        for b in ("ton", "ville", "berg", "ford", "stad", "mouth", "wick", "ham", "by")
    ]
    return " ".join(rng.choice(vocab) for _ in range(words))


def edit(body: str, at: int, word: str = "zulufoxtrot") -> str:
    """The same text with one word replaced: a near-duplicate for simhash (k=3)."""
    words = body.split()
    words[at] = word
    return " ".join(words)


# Three unrelated texts for re-crawl stories: a page, another page, a page's changed content.
A = random_text(1)
OTHER = random_text(2)
CHANGED = random_text(3)

# The text rules the stories on these texts were measured with: stop words out and stems. Their
# one-word edits sit within simhash's k=3 there by the draw of their hashes (A's edit at word 5:
# distance 2); with words as they are, the default, that edit falls at 8. A draw, not a rule:
# over 30 such texts the two rules give the same distances (2.60 and 2.74 bits on average).
STEMMED = {"stem": True, "remove_stopwords": True}
STEMMED_FLAGS = ("--stopwords", "--stem")  # the same rules on the command line


def random_vocabulary(rng: random.Random, size: int, shortest: int) -> list[str]:
    """`size` made-up lowercase words of `shortest` to 9 letters."""
    return [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(shortest, 9)))
        for _ in range(size)
    ]


def paragraphs_page(size: int, seed: int, title: str) -> bytes:
    """An HTML page of at least `size` bytes of real-looking paragraphs (random words from a
    fixed vocabulary)."""
    rng = random.Random(seed)
    vocab = random_vocabulary(rng, 5000, shortest=3)
    parts = [f"<!DOCTYPE html><html><head><title>{title}</title></head><body>\n".encode()]
    total = len(parts[0])
    while total < size:
        para = ("<p>" + " ".join(rng.choice(vocab) for _ in range(80)) + "</p>\n").encode()
        parts.append(para)
        total += len(para)
    parts.append(b"</body></html>\n")
    return b"".join(parts)


def near_copy_groups(
    seed: int, vocabulary: int, originals: int, words: int
) -> Iterator[list[Document]]:
    """For n in range(originals), a group: original "d{n}" of `words` words followed by 0 to 2
    copies "d{n}-{m}", each with 0 to 3 words replaced. Words are "w0".."w{vocabulary-1}"."""
    rng = random.Random(seed)
    vocab = [f"w{n}" for n in range(vocabulary)]
    for n in range(originals):
        text = [rng.choice(vocab) for _ in range(words)]
        group = [Document(f"d{n}", text=" ".join(text))]
        for m in range(rng.randint(0, 2)):
            edited = list(text)
            for _ in range(rng.randint(0, 3)):
                edited[rng.randrange(len(edited))] = rng.choice(vocab)
            group.append(Document(f"d{n}-{m}", text=" ".join(edited)))
        yield group


def corpus_with_copies(seed: int = 9) -> list[Document]:
    """Originals followed closely by edited copies (same batch), re-checked ids, an empty page."""
    docs: list[Document] = []
    for n, group in enumerate(near_copy_groups(seed, vocabulary=400, originals=40, words=150)):
        docs += group
        if n % 13 == 5:  # the same id again, in the same batch: changed and unchanged
            words = (group[0].text or "").split()
            docs.append(Document(f"d{n}", text=" ".join(reversed(words))))
            docs.append(Document(f"d{n - 1}", text=docs[-4].text))
        if n == 20:
            docs.append(Document("empty", text="too short"))
    return docs
