"""The HTML vocabulary of text extraction: which elements are invisible, which separate words,
and which are site chrome. One table for both walks of a page's tree (chrome.py's Python walk
and the C++ one in _textwalk.pyx), so they cannot drift apart."""

from __future__ import annotations

# Elements whose content is never shown as page text.
INVISIBLE_TAGS: frozenset[str] = frozenset(
    {"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object"}
)
# Elements that separate words visually; their text must not run into a neighbour's.
BLOCK_TAGS: tuple[str, ...] = (
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "option", "p", "pre",
    "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "title", "tr", "ul",
    "body", "html", "img", "input", "button", "select", "textarea", "label",
)
# Site chrome (see chrome.drop_chrome): the landmarks HTML and ARIA define as not the page's own
# content, and blocks whose every word is link text (menus, breadcrumbs, link rows, tables of
# contents).
LANDMARK_TAGS: tuple[str, ...] = ("nav", "aside", "menu")
# A header or footer is the page's own outside these, an article's inside them.
PAGE_LANDMARK_TAGS: tuple[str, ...] = ("header", "footer")
SECTIONING_TAGS: tuple[str, ...] = ("article", "main", "section")
MAIN_TAGS: tuple[str, ...] = ("main", "article")  # where a page says its own content is
LANDMARK_ROLES: frozenset[str] = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search"}
)
LINK_BLOCK_TAGS: tuple[str, ...] = (
    "li", "p", "div", "td", "th", "dd", "dt", "ul", "ol", "dl", "table", "tr", "span",
)

# Form controls: a page's widgets, not its text (the running-text reading drops them).
CONTROL_TAGS: tuple[str, ...] = ("button", "select", "label", "textarea")
# Blocks inside these are a page's own structures (list items, code, table cells, headings):
# kept however short when their words are not links.
STRUCTURE_TAGS: tuple[str, ...] = ("li", "pre", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6")
PAGE_ROOT_TAGS: tuple[str, ...] = ("html", "body")  # never chrome by their names
# A word of an element's class or id beginning with one of these names it chrome (the regions
# Readability and trafilatura drop by name); lower-case ASCII, matched as word prefixes.
CHROME_NAME_STEMS: tuple[str, ...] = (
    "comment", "share", "social", "cookie", "consent", "newsletter", "subscri", "related",
    "breadcrumb", "pagination", "sponsor", "advert", "popup", "modal", "sidebar",
    "banner", "footer",
)
# A word of an element's class or id equal to one of these names it content: an element named
# as chrome that holds one is a layout box around the article ("sidebar-layout" around
# "post-body"). Not "widget": page builders (Elementor) call every box of a page one.
CONTENT_NAMES: frozenset[str] = frozenset(
    {"article", "content", "main", "post", "entry", "story", "body", "text"}
)
