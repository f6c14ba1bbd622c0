"""Settings of the text stage: which text of a page is read, and how it becomes words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from neardup_pipeline.errors import ConfigError
from neardup_pipeline.extras import require_extra
from neardup_pipeline.setting import doc

Content = Literal["whole", "chromeless", "main"]
CONTENTS: tuple[Content, ...] = ("whole", "chromeless", "main")


@dataclass(frozen=True)
class TextSettings:
    """What the extraction and the normaliser read (text/extract.py, text/normalize.py)."""

    PREFIX: ClassVar[str] = ""

    content: Content = field(
        default="chromeless",
        metadata=doc(
            "`chromeless`: the page's running text without its site chrome (blocks of "
            "text by their words and links, landmarks, elements named as chrome; with "
            "little running text, the page without landmarks and link-only blocks; see "
            "[how-it-works.md](how-it-works.md)); `whole`: every visible word; "
            "`main`: its main content (resiliparse's main-content rules; the chromeless text "
            "when they find under 50 words or a fifth of that), 1-7 ms a page. Stored with "
            "the index"
        ),
    )
    language: str | None = field(
        default=None,
        metadata=doc(
            "ISO 639-1 code for every page; unset: detected per page (CLD2; py3langid where "
            "CLD2 cannot tell)"
        ),
    )
    remove_stopwords: bool = field(
        default=False,
        metadata=doc(
            "Drop the stop words of the page's language (`stop-words` lists: en, ru, ca, fa and "
            "more); off: a word counts whatever the language the page is read in (an article "
            "under another language's chrome keeps its words)"
        ),
    )
    stem: bool = field(
        default=False,
        metadata=doc(
            "Snowball stems in the page's language (PyStemmer; en, ru, ca, fa and 29 more); off: "
            "words as they are, whatever the page's language"
        ),
    )
    max_html_bytes: int = field(
        default=20 * 1024 * 1024,
        metadata=doc("Pages beyond this size (20 MiB) are cut there, not refused"),
    )
    max_html_tags: int = field(
        default=200_000,
        metadata=doc(
            "More tags (or one tag longer than 64 KB): the page is read by a linear scan "
            "instead of a tree parser (see [reliability.md](reliability.md))"
        ),
    )
    max_words: int = field(
        default=200_000,
        metadata=doc("Words read per page; text past 32 characters a word is not read either"),
    )
    max_token_chars: int = field(
        default=64, metadata=doc('Longer "words" (base64, hashes) are ignored')
    )
    min_tokens: int = field(
        default=1,
        metadata=doc('Fewer words: `neardup_status = "no_text"`, kept, not indexed'),
    )

    def __post_init__(self) -> None:
        if self.content not in CONTENTS:
            raise ConfigError(f"content must be one of {', '.join(CONTENTS)}, got {self.content!r}")
        if self.content == "main":
            require_extra("main")  # at start, not an ImportError on the first page
        if (
            min(
                self.max_html_bytes,
                self.max_html_tags,
                self.max_words,
                self.max_token_chars,
                self.min_tokens,
            )
            < 1
        ):
            raise ConfigError(
                "max_html_bytes, max_html_tags, max_words, max_token_chars and "
                "min_tokens must be >= 1"
            )
