"""Copies across sites (methods/bag.py, text/site.py, blocks.content_region): an article under
another site's chrome is a copy by containment; within one site containment is never used, and
two pages whose content regions differ are different pages whatever the chrome they share. On
the real pages of tests/data/web-pages-multisite."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import lxml.html
import numpy as np
import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import MemoryIndex
from neardup_pipeline.methods.bag import BagMethod, contained, sequence_contained
from neardup_pipeline.text.extract import html_to_text
from neardup_pipeline.text.site import site_of
from tests.cli_runner import neardup
from tests.test_blocks import ARTICLE_PAGE, HOST_PAGE, MULTISITE, hosted_copy

ORIGINAL_URL = "https://de.creativecommons.org/index.php/2013/03/14/endlich-wird-es-spannend/"
COPY_URL = "https://creativecommons.at/copies/endlich-wird-es-spannend"


def verdicts(config: NearDupConfig, *docs: tuple[str, bytes]) -> list[str | None]:
    """Each document's `duplicate_of`, checked in order against one memory index."""
    dedup = Deduplicator(MemoryIndex(), config)
    return [dedup.process(Document(url, html=html, url=url)).duplicate_of for url, html in docs]


def test_a_site_is_its_registrable_domain() -> None:
    assert site_of("https://news.bbc.co.uk/a") == site_of("http://www.BBC.co.uk:80/b") == \
        "bbc.co.uk"
    assert site_of("https://x.github.io/p") != site_of("https://y.github.io/p")  # private suffix
    assert site_of("http://127.0.0.1:8000/p") == "127.0.0.1"
    assert site_of("https://user:secret@example.org/p") == "example.org"
    for nothing in (None, "", "doc-17", "ftp://example.org/f", "http://[::1/x", "mailto:a@b.c"):
        assert site_of(nothing) == ""


def test_the_content_region_of_a_copy_is_the_article_not_the_hosts_teasers() -> None:
    own = html_to_text((MULTISITE / ARTICLE_PAGE).read_bytes(), chromeless=True)
    moved = html_to_text(hosted_copy(), chromeless=True)
    assert own.region == ""  # the article is nearly all of its own page's running text
    assert moved.region and moved.region in moved.text
    assert "dass dies nicht ernsthaft das letzte Wort sein kann." in moved.region
    assert "Nach fast zwei Jahren Arbeit" in moved.text  # the host's teaser summary...
    assert "Nach fast zwei Jahren Arbeit" not in moved.region  # ...lies outside the article


def test_an_article_under_another_sites_chrome_is_a_copy_of_its_original() -> None:
    """The host's teaser summaries leave a bag similarity of 0.49: a miss by resemblance, a copy
    by containment (the original lies whole inside the copy)."""
    original = (MULTISITE / ARTICLE_PAGE).read_bytes()
    found = verdicts(NearDupConfig(), (ORIGINAL_URL, original), (COPY_URL, hosted_copy()))
    assert found == [None, ORIGINAL_URL]
    found = verdicts(NearDupConfig(), (COPY_URL, hosted_copy()), (ORIGINAL_URL, original))
    assert found == [None, COPY_URL]  # met in either order
    off = NearDupConfig().replace(bag_site_containment=0.0, bag_order_threshold=0.5)
    assert verdicts(off, (ORIGINAL_URL, original), (COPY_URL, hosted_copy())) == [None, None]
    same_site = ORIGINAL_URL.replace("/2013/", "/copies/2013/")  # containment: across sites only
    assert verdicts(NearDupConfig(), (ORIGINAL_URL, original), (same_site, hosted_copy())) == \
        [None, None]
    unknown = [Document("a", html=original), Document("b", html=hosted_copy())]  # no URL: no site
    dedup = Deduplicator(MemoryIndex(), NearDupConfig())
    assert [dedup.process(doc).duplicate_of for doc in unknown] == [None, None]


def test_the_hosts_own_page_is_no_copy_of_the_article_it_hosts() -> None:
    host_url = "https://creativecommons.at/faircoin"
    found = verdicts(NearDupConfig(), (host_url, (MULTISITE / HOST_PAGE).read_bytes()),
                     (COPY_URL, hosted_copy()),
                     (ORIGINAL_URL, (MULTISITE / ARTICLE_PAGE).read_bytes()))
    assert found == [None, None, COPY_URL]


def test_an_article_beside_the_hosts_own_is_found_by_its_passages() -> None:
    """The article placed beside the host's own, longer one (an aggregator's page): the copy's
    content region is the host's article, so no band key of the two pages meets (whole-page word
    sets resemble 0.33); their passage keys do, and containment judges the pair."""
    original = (MULTISITE / ARTICLE_PAGE).read_bytes()
    beside = hosted_copy(beside=True)
    assert "FairCoin" in html_to_text(beside, chromeless=True).region
    pages = ((ORIGINAL_URL, original), (COPY_URL, beside))
    assert verdicts(NearDupConfig(), *pages) == [None, ORIGINAL_URL]
    assert verdicts(NearDupConfig(), *reversed(pages)) == [None, COPY_URL]
    off = NearDupConfig().replace(bag_passage_sample=0)
    assert verdicts(off, *pages) == [None, None]  # the verdict would agree: no key found it
    fingerprinter = Fingerprinter(NearDupConfig())
    bag = fingerprinter.methods["bag"]
    explained = bag.explain(*(fingerprinter.fingerprint(Document(url, html=html, url=url))
                              .signatures["bag"] for url, html in pages))
    assert explained["shared_bands"] == 0 and explained["shared_passages"] >= 2


def _host_with_article(paragraph: str) -> bytes:
    """The Drupal host page with `paragraph` as its article, its teasers and menus kept."""
    host = lxml.html.fromstring((MULTISITE / HOST_PAGE).read_bytes())
    slot = host.find(".//*[@id='node-205']")
    assert slot is not None and slot.getparent() is not None
    article = lxml.html.fromstring(f"<div class='node'><p>{paragraph}</p></div>")
    slot.getparent().replace(slot, copy.deepcopy(article))
    return bytes(lxml.html.tostring(host, encoding="utf-8"))


def test_two_articles_under_one_sites_teasers_are_different_pages() -> None:
    """Two short articles in one host page (the first and the last 40 words of the multisite
    article): the host's teaser summaries are most of each page's running text, and whole-page
    resemblance with a looser word order (0.5) calls them copies; their content regions do not."""
    article = lxml.html.fromstring((MULTISITE / ARTICLE_PAGE).read_bytes()).find(
        ".//*[@id='post-1185']")
    assert article is not None
    words = article.text_content().split()
    first, second = (_host_with_article(" ".join(part)) for part in (words[:40], words[-40:]))
    pages = (("https://creativecommons.at/a", first), ("https://creativecommons.at/b", second))
    off = NearDupConfig().replace(bag_site_containment=0.0, bag_order_threshold=0.5)
    assert verdicts(off, *pages) == [None, "https://creativecommons.at/a"]  # the chrome's match
    assert verdicts(NearDupConfig(), *pages) == [None, None]


def test_containment_is_read_from_the_bags_and_the_word_order() -> None:
    fingerprinter = Fingerprinter(NearDupConfig())
    bag = fingerprinter.methods["bag"]
    assert isinstance(bag, BagMethod)
    text = " ".join(f"w{n}" for n in range(400))
    inner, outer = (fingerprinter.fingerprint(Document(i, text=t)).signatures["bag"]
                    for i, t in (("in", text[:1200]), ("out", text)))
    assert contained(inner, outer, bag.max_words) == pytest.approx(1.0, abs=0.01)
    assert contained(outer, inner, bag.max_words) == pytest.approx(1.0, abs=0.01)  # symmetric
    assert sequence_contained(inner.sequence, outer.sequence) == 1.0
    shuffled = " ".join(np.random.default_rng(5).permutation(text[:1200].split()).tolist())
    moved = fingerprinter.fingerprint(Document("moved", text=shuffled)).signatures["bag"]
    assert contained(moved, outer, bag.max_words) == pytest.approx(1.0, abs=0.01)
    assert sequence_contained(moved.sequence, outer.sequence) < 0.1  # the words, not the text
    truncated = BagMethod(max_words=64)  # bags sampled below their largest hash
    small, large = (truncated.signature(t.split(), fingerprinter.hasher)
                    for t in (text[:1200], text))
    assert contained(small, large, 64) == pytest.approx(1.0, abs=0.01)


def test_the_site_and_region_are_stored_with_the_signature() -> None:
    fingerprinter = Fingerprinter(NearDupConfig())
    fp = fingerprinter.fingerprint(Document(COPY_URL, html=hosted_copy(), url=COPY_URL))
    back = fingerprinter.decode(fingerprinter.encode(fp))["bag"]
    signature = fp.signatures["bag"]
    assert signature.site and back.site == signature.site
    assert signature.region.size == 84 and np.array_equal(back.region, signature.region)
    assert len(fp.keys["bag"]) > 21  # the region's bands beside the page's


def test_compare_shows_each_pages_site_and_content_region(tmp_path: Path) -> None:
    copy_file = tmp_path / "copy.html"
    copy_file.write_bytes(hosted_copy())
    original = str(MULTISITE / ARTICLE_PAGE)
    shown = neardup("compare", original, str(copy_file), "--url-a", ORIGINAL_URL,
                    "--url-b", COPY_URL, "--method", "bag", "--text-chars", "60")
    assert shown.returncode == 0, shown.stderr  # near-duplicates: copied across sites
    out = shown.stdout
    assert "site: creativecommons.org" in out and "site: creativecommons.at" in out
    assert "content region (121 of the text's words):" in out
    assert "other_sites=True" in out and "containment=1.0" in out
    as_files = neardup("compare", original, str(copy_file), "--method", "bag", "--json")
    assert as_files.returncode == 1  # files have no site: resemblance alone, 0.49
    report = json.loads(as_files.stdout)
    assert report["a"]["site"] is None and report["b"]["region"].endswith("letzte Wort sein kann.")
