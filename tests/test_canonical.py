"""The canonical-copy rule (pure), its setting, and the word diff the report shows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.report.worddiff import word_diff
from neardup_pipeline.verdict.canonical import Candidate, choose, page_date, prefer, rule_key


def cand(doc_id: str, url: str, length: int = 100, date: str | None = None,
         seen: float = 0.0, declared: bool | None = None) -> Candidate:
    return Candidate(doc_id, url, length, date, seen, declared)


def test_rule_order_declared_then_date_then_text_then_https() -> None:
    declared = cand("a", "http://e.org/a/much/longer/path", length=10, declared=True)
    dated = cand("b", "https://e.org/a", length=10_000, date="2020-01-01")
    assert prefer(declared, dated, "best") and not prefer(dated, declared, "best")
    names_other = cand("n", "https://e.org/print/a", length=10_000, date="2020-01-01",
                       declared=False)
    assert prefer(cand("s", "http://e.org/s", length=1), names_other, "best")  # silence wins
    early = cand("f", "http://e.org/z", length=10, date="2020-01-01")
    late = cand("g", "https://e.org/w", length=10_000, date="2024-06-30")
    undated = cand("h", "https://e.org/v", length=10_000)
    assert prefer(early, late, "best") and not prefer(late, early, "best")
    assert prefer(late, undated, "best")  # a dated copy beats an undated one
    more_text = cand("c", "http://e.org/long/path/x", length=500)
    less_text = cand("d", "https://e.org/x", length=499)
    assert prefer(more_text, less_text, "best")  # more text wins over https and a short URL
    https = cand("e", "https://e.org/long/path/x", length=500)
    assert prefer(https, more_text, "best")  # all else equal: https


def test_a_shorter_url_alone_never_replaces_the_incumbent() -> None:
    """`/archive/x` is one character shorter than `/articles/x`: no reason to prefer it."""
    articles = cand("articles", "https://e.org/articles/transactions.html", seen=1.0)
    archive = cand("archive", "https://e.org/archive/transactions.html", seen=2.0)
    assert not prefer(archive, articles, "best")
    assert choose([archive, articles], "best").doc_id == "articles"
    assert rule_key(articles) == rule_key(archive)


def test_tie_keeps_the_incumbent_and_first_policy_never_switches() -> None:
    a, b = cand("a", "https://e.org/1"), cand("b", "https://e.org/2")
    assert rule_key(a) == rule_key(b)
    assert not prefer(b, a, "best") and not prefer(a, b, "best")
    better = cand("c", "https://e.org/c", length=10_000, declared=True)
    assert not prefer(better, cand("d", "http://e.org/dddd"), "first")
    assert not prefer(a, a, "best")  # a copy never replaces itself


def test_choose_first_seen_or_best() -> None:
    members = [cand("late-https", "https://e.org/p", seen=3.0),
               cand("orig", "http://e.org/p", seen=1.0),
               cand("mid", "http://e.org/q", seen=2.0)]
    assert choose(members, "first").doc_id == "orig"
    assert choose(members, "best").doc_id == "late-https"
    declared = cand("declared", "http://e.org/r", length=1, seen=4.0, declared=True)
    assert choose([*members, declared], "best").doc_id == "declared"
    assert choose([*members, declared], "first").doc_id == "orig"
    with pytest.raises(ValueError):
        choose([], "best")


@given(st.lists(st.tuples(st.sampled_from(["http", "https"]), st.text("ab/", max_size=6),
                          st.integers(0, 50), st.sampled_from([None, "2020-01-01", "2021-02-03"]),
                          st.sampled_from([True, None, False])),
                min_size=1, max_size=8))
def test_choose_is_the_rule_minimum_whatever_the_arrival_order(rows: list[tuple]) -> None:
    members = [cand(str(i), f"{s}://e.org/{p}", n, d, float(i), declared)
               for i, (s, p, n, d, declared) in enumerate(rows)]
    best = choose(members, "best")
    assert rule_key(best) == min(rule_key(m) for m in members)
    assert not any(prefer(m, best, "best") for m in members)


def test_page_date_reads_markup_and_url_and_never_fetches() -> None:
    html = ('<html><head><meta property="article:published_time" content="2021-03-04T10:00:00Z">'
            "</head><body><p>words</p></body></html>")
    assert page_date(html) == "2021-03-04"
    assert page_date("<html><body><p>x</p></body></html>",
                     "http://e.org/2019/05/06/post") == "2019-05-06"
    # htmldate downloads a *string* that looks like a URL: page text is passed as bytes.
    assert page_date("http://127.0.0.1:9/never-fetched") is None
    assert page_date(None) is None


def test_canonical_setting() -> None:
    assert NearDupConfig().scrapy.canonical == "first"
    settings = Settings({"NEARDUP_CANONICAL": "best"})
    assert NearDupConfig.from_settings(settings).scrapy.canonical == "best"
    with pytest.raises(ConfigError, match="canonical"):
        NearDupConfig().replace(canonical="newest")  # type: ignore[arg-type]


def test_word_diff_marks_only_the_changed_words() -> None:
    diff = word_diff("the cat sat on the mat", "the dog sat on the mat today")
    assert [(s.kind, s.text) for s in diff.left] == [
        ("same", "the"), ("changed", "cat"), ("same", "sat on the mat")]
    assert [(s.kind, s.text) for s in diff.right] == [
        ("same", "the"), ("changed", "dog"), ("same", "sat on the mat"), ("changed", "today")]
    assert 0.7 < diff.ratio < 1 and not diff.truncated
    assert word_diff("a " * 20, "a " * 20, max_words=5).truncated
    same = word_diff("", "")
    assert same.left == [] and same.right == []
