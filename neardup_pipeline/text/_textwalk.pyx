# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""Site chrome and visible text of a page parsed by libxml2, in C++.

The same rules as `chrome.drop_chrome` and `chrome.python_walk` (the pure-Python reference, kept
for installs without a compiler): landmarks, link-only blocks judged innermost first under a read
limit, the blocks before the title, block boundaries as spaces, whitespace collapsed as
`str.split` does.

A page's tree is first copied into a flat one (`_Tree`: elements and text nodes in document
order, linked by index, each element's tag kinds as bits, the text in one UTF-8 buffer), which
the walk reads for every chrome level. libxml2 fills it two ways:
- its parse events (`libxml2_walk`, the default): lxml's HTML parse without the tree it would
  build, 2-3x faster (the tree's nodes are most of the parse's cost); it runs only against the
  libxml2 whose headers it was compiled with (`LIBXML2_HEADERS`, checked by `_load_libxml2`);
- lxml's tree (`chrome_walk`), read through lxml's public C API.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from cython.operator cimport dereference as deref
from libc.stdint cimport uint64_t, uintptr_t
from libc.string cimport memchr, memcpy, memset, strcmp, strlen
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

cimport lxml.includes.etreepublic as cetree
from lxml.includes.tree cimport (
    LIBXML_VERSION as HEADERS_VERSION, XML_CDATA_SECTION_NODE as CDATA_NODE,
    XML_ELEMENT_NODE as ELEMENT_NODE, XML_TEXT_NODE as TEXT_NODE, xmlAttr, xmlChar, xmlDict, xmlDoc,
    xmlNode,
)
from lxml.includes.xmlerror cimport XML_ERR_RESOURCE_LIMIT, xmlError, xmlStructuredErrorFunc
from lxml.includes.xmlparser cimport (
    cdataBlockSAXFunc, charactersSAXFunc, endElementSAXFunc, startElementSAXFunc, xmlParserCtxt,
    xmlSAXHandler,
)

cdef extern from "Python.h":
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch)

cdef extern from "<string.h>" nogil:
    void* memmem(const void* haystack, size_t haystack_length, const void* needle,
                 size_t needle_length)

cdef extern from "<dlfcn.h>" nogil:
    void* dlopen(const char* filename, int flags)
    void* dlsym(void* handle, const char* symbol)
    int RTLD_NOW
    int RTLD_NOLOAD

import threading

from neardup_pipeline.text.blocks import (
    CHROME_NAMED, CONTENT_NAMED, MAX_LINK_DENSITY, REGION_SHARE_DENOMINATOR,
    REGION_SHARE_NUMERATOR, SHORT_WORDS,
)
from neardup_pipeline.text.htmltags import (
    BLOCK_TAGS, CHROME_NAME_STEMS, CONTENT_NAMES, CONTROL_TAGS, INVISIBLE_TAGS, LANDMARK_ROLES,
    LANDMARK_TAGS, LINK_BLOCK_TAGS, MAIN_TAGS, PAGE_LANDMARK_TAGS, PAGE_ROOT_TAGS,
    SECTIONING_TAGS, STRUCTURE_TAGS,
)

cetree.import_lxml__etree()

# chrome.Chrome
cdef enum:
    KEEP = 0
    LANDMARKS = 1
    LINKS_BEFORE_TITLE = 2
    LINKS = 3
    BLOCKS = 4

# What a tag name is, as bits (one element may be several: "main" is both MAIN and SECTIONING).
cdef enum:
    BLOCK = 1
    LINK_BLOCK = 2
    LANDMARK = 4
    PAGE_LANDMARK = 8
    SECTIONING = 16
    MAIN = 32
    ANCHOR = 64  # a
    H1 = 128
    H2 = 256
    INVISIBLE = 512  # never text (htmltags.INVISIBLE_TAGS): not copied
    TITLE = 1024
    CONTROL = 2048
    STRUCTURE = 4096
    PAGE_ROOT = 8192

# An element's role attribute, as chrome._role reads it
cdef enum:
    NO_ROLE = 0
    MAIN_ROLE = 1
    LANDMARK_ROLE = 2

# libxml2's tree builder stops at this nesting depth (huge_tree) and extract sends the page to bs4:
# the event reader stops there too, so both ways of reading libxml2 refuse the same pages.
cdef int MAX_DEPTH = 2048

cdef list _KINDS = [(BLOCK, BLOCK_TAGS), (LINK_BLOCK, LINK_BLOCK_TAGS), (LANDMARK, LANDMARK_TAGS),
                    (PAGE_LANDMARK, PAGE_LANDMARK_TAGS), (SECTIONING, SECTIONING_TAGS),
                    (MAIN, MAIN_TAGS), (ANCHOR, ("a",)), (H1, ("h1",)), (H2, ("h2",)),
                    (INVISIBLE, INVISIBLE_TAGS), (TITLE, ("title",)), (CONTROL, CONTROL_TAGS),
                    (STRUCTURE, STRUCTURE_TAGS), (PAGE_ROOT, PAGE_ROOT_TAGS)]
cdef unordered_map[string, int] _KIND_OF_NAME
for _bit, _names in _KINDS:
    for _name in _names:
        _KIND_OF_NAME[_name.encode()] = _KIND_OF_NAME[_name.encode()] | _bit


cdef int _kind_of_name(const char* name, size_t length) noexcept:
    cdef unordered_map[string, int].iterator named = _KIND_OF_NAME.find(string(name, length))
    return deref(named).second if named != _KIND_OF_NAME.end() else 0


# blocks.name_kind's tables, by a word's first letter (a-z)
cdef vector[vector[string]] _STEMS_BY_LETTER = vector[vector[string]](26)
cdef vector[vector[string]] _CONTENT_BY_LETTER = vector[vector[string]](26)
for _stem in CHROME_NAME_STEMS:
    _STEMS_BY_LETTER[ord(_stem[0]) - 97].push_back(_stem.encode())
for _name in CONTENT_NAMES:
    _CONTENT_BY_LETTER[ord(_name[0]) - 97].push_back(_name.encode())
cdef int _CHROME_NAMED = CHROME_NAMED
cdef int _CONTENT_NAMED = CONTENT_NAMED
# blocks.keeps' thresholds
cdef double _MAX_LINK_DENSITY = MAX_LINK_DENSITY
cdef Py_ssize_t _SHORT_WORDS = SHORT_WORDS


cdef int _word_kind(const string& word) noexcept:
    cdef int kind = 0
    cdef size_t i
    cdef int letter = <int>word[0] - 97
    for i in range(_STEMS_BY_LETTER[letter].size()):
        if word.compare(0, _STEMS_BY_LETTER[letter][i].size(), _STEMS_BY_LETTER[letter][i]) == 0:
            kind |= _CHROME_NAMED
            break
    for i in range(_CONTENT_BY_LETTER[letter].size()):
        if word == _CONTENT_BY_LETTER[letter][i]:
            kind |= _CONTENT_NAMED
            break
    return kind


cdef int _name_kind(const char* value, size_t length) noexcept:
    """blocks.name_kind of a class or id value: its words are runs of ASCII letters, split
    before an upper-case letter that follows a lower-case one, lower-cased."""
    cdef string word
    cdef int kind = 0
    cdef size_t i
    cdef unsigned char c
    cdef bint lower_before = False
    for i in range(length + 1):
        c = <unsigned char>value[i] if i < length else 0
        if 97 <= c <= 122:
            word.push_back(<char>c)
            lower_before = True
        elif 65 <= c <= 90:
            if lower_before:
                kind |= _word_kind(word)
                word.clear()
            word.push_back(<char>(c + 32))
            lower_before = False
        else:
            if word.size():
                kind |= _word_kind(word)
                word.clear()
            lower_before = False
    return kind


cdef int _role_of(bytes value):
    """chrome._role's reading of a role attribute's value: stripped, lower case."""
    role = value.decode("utf-8", "replace").strip().lower()
    if role == "main":
        return MAIN_ROLE
    return LANDMARK_ROLE if role in LANDMARK_ROLES else NO_ROLE


cdef struct Node:
    int parent  # -1 at the root
    int first_child  # -1: none
    int next  # -1: the last child
    int bits  # tag kinds; 0 for a text node
    int role
    int names  # blocks.name_kind of its class and id
    bint element
    size_t start  # a text node's bytes in _Tree.texts
    size_t length


cdef struct TextSize:
    Py_ssize_t chars  # code points (len(str))
    Py_ssize_t visible  # code points other than " ", "\n", "\t", "\r" (chrome._visible_chars)


cdef struct Block:
    int node
    int outer  # index of the next link block around it, -1 for none
    int depth  # link blocks around it, itself included
    Py_ssize_t chars  # link text, in it and (after the totals pass) in the blocks inside it
    Py_ssize_t links
    bint ruled_out


cdef struct Span:
    size_t start  # its first word's first byte in the text
    size_t end
    Py_ssize_t words
    Py_ssize_t link_words  # words that begin inside a link
    int owner  # the innermost block element holding it (blocks.Block.owner)


cdef class _Tree:
    """A page's elements and text in document order (the invisible elements left out), and the
    chrome decisions of a walk over them: the source tree is never changed."""

    cdef vector[Node] nodes
    cdef string texts
    cdef vector[int] open  # while filling: the elements whose children are being added
    cdef vector[int] last  # while filling: each open element's last child so far
    cdef bint roles
    cdef Py_ssize_t read_limit
    cdef vector[char] regions  # main content the page marks
    cdef bint any_region  # the page marks some (set with regions)
    cdef vector[int] landmarks
    cdef vector[int] link_blocks  # judged link-only, in the order judged
    cdef bint found  # landmarks and regions
    cdef bint judged  # link blocks

    def __cinit__(self, bint roles, Py_ssize_t read_limit):
        self.roles = roles
        self.read_limit = read_limit
        self.found = False
        self.judged = False
        self.any_region = False

    # --- filling, in document order -----------------------------------------------------------

    cdef int _add(self, bint element, int bits) except -1:
        cdef Node node
        node.parent = self.open.back() if self.open.size() else -1
        node.first_child = -1
        node.next = -1
        node.bits = bits
        node.role = NO_ROLE
        node.names = 0
        node.element = element
        node.start = self.texts.size()
        node.length = 0
        cdef int index = <int>self.nodes.size()
        self.nodes.push_back(node)
        if self.open.size():
            if self.last.back() < 0:
                self.nodes[self.open.back()].first_child = index
            else:
                self.nodes[self.last.back()].next = index
            self.last[self.last.size() - 1] = index
        return index

    cdef int open_element(self, int bits) except -1:
        cdef int index = self._add(True, bits)
        self.open.push_back(index)
        self.last.push_back(-1)
        return index

    cdef void close_element(self) noexcept:
        self.open.pop_back()
        self.last.pop_back()

    cdef int add_text(self, const char* text, size_t length) except -1:
        cdef int index
        if self.open.size() == 0:
            return 0  # outside the root element: not the page's text
        index = self._add(False, 0)
        self.texts.append(text, length)
        self.nodes[index].length = length
        return 0

    cdef int append_text(self, const char* text, size_t length) except -1:
        """add_text, joined to the open element's last child when that is text (as libxml2's
        tree builder joins a text event to the text node before it)."""
        cdef int last
        if self.open.size() and self.last.back() >= 0:
            last = self.last.back()
            if not self.nodes[last].element:
                self.texts.append(text, length)
                self.nodes[last].length += length
                return 0
        return self.add_text(text, length)

    # --- the walk -----------------------------------------------------------------------------

    cdef inline bint _is(self, int node, int bits) noexcept:
        return (self.nodes[node].bits & bits) != 0

    cdef inline int _next_within(self, int node, int top) noexcept:
        """The node after `node` in document order inside `top`'s subtree (-1 at its end)."""
        if self.nodes[node].first_child >= 0:
            return self.nodes[node].first_child
        while node != top:
            if self.nodes[node].next >= 0:
                return self.nodes[node].next
            node = self.nodes[node].parent
        return -1

    cdef TextSize _text_size(self, int top) noexcept:
        """Size of an element's text content (chrome._text_of: text below it, not its tail)."""
        cdef TextSize size
        size.chars = 0
        size.visible = 0
        cdef int node = self._next_within(top, top)
        cdef size_t i
        cdef unsigned char byte
        cdef const unsigned char* text = <const unsigned char*>self.texts.data()
        while node >= 0:
            if not self.nodes[node].element:
                for i in range(self.nodes[node].start,
                               self.nodes[node].start + self.nodes[node].length):
                    byte = text[i]
                    if (byte & 0xC0) != 0x80:
                        size.chars += 1
                        if byte != 32 and byte != 10 and byte != 9 and byte != 13:
                            size.visible += 1
            node = self._next_within(node, top)
        return size

    cdef bint _has_tail(self, int node) noexcept:
        """Whether text follows the element before its next sibling element (lxml's .tail)."""
        cdef int after = self.nodes[node].next
        while after >= 0 and not self.nodes[after].element:
            if self.nodes[after].length:
                return True
            after = self.nodes[after].next
        return False

    cdef void _find_landmarks(self):
        if self.found:
            return
        self.found = True
        self.regions.assign(self.nodes.size(), 0)
        cdef int node = 0, up
        cdef bint sectioned
        while node >= 0:
            if self.nodes[node].element:
                if self._is(node, MAIN):
                    self.regions[node] = 1
                    self.any_region = True
                if self._is(node, LANDMARK):
                    self.landmarks.push_back(node)
                elif self._is(node, PAGE_LANDMARK):
                    sectioned = False
                    up = self.nodes[node].parent
                    while up >= 0 and not sectioned:
                        sectioned = self._is(up, SECTIONING)
                        up = self.nodes[up].parent
                    if not sectioned:
                        self.landmarks.push_back(node)
                if self.roles:
                    if self.nodes[node].role == MAIN_ROLE:
                        self.regions[node] = 1
                        self.any_region = True
                    elif self.nodes[node].role == LANDMARK_ROLE:
                        self.landmarks.push_back(node)
            node = self._next_within(node, 0)

    cdef void _judge_link_blocks(self):
        """chrome._link_only_blocks: each link counts toward its innermost link block, totals
        pass outward, blocks are judged deepest first (in order of discovery within a depth)
        and one with words of its own rules out the blocks around it unread."""
        if self.judged:
            return
        self.judged = True
        cdef vector[int] innermost = vector[int](self.nodes.size(), -2)  # -2: not walked yet
        cdef vector[Block] blocks
        cdef vector[int] walked
        cdef int node = 0, step, inner, i, depth, max_depth = 0
        cdef Block block
        cdef TextSize size
        while node >= 0:
            if self._is(node, ANCHOR):
                walked.clear()
                step = self.nodes[node].parent
                while step >= 0 and innermost[step] == -2:
                    walked.push_back(step)
                    step = self.nodes[step].parent
                inner = innermost[step] if step >= 0 else -1
                for i in range(<int>walked.size() - 1, -1, -1):
                    step = walked[i]
                    if self._is(step, LINK_BLOCK):
                        block.node = step
                        block.outer = inner
                        block.depth = blocks[inner].depth + 1 if inner >= 0 else 1
                        block.chars = 0
                        block.links = 0
                        block.ruled_out = False
                        blocks.push_back(block)
                        inner = <int>blocks.size() - 1
                        if block.depth > max_depth:
                            max_depth = block.depth
                    innermost[step] = inner
                if inner >= 0:
                    size = self._text_size(node)
                    blocks[inner].chars += size.visible
                    blocks[inner].links += 1
            node = self._next_within(node, 0)
        # deepest first, in order of discovery within one depth (Python's stable sort)
        cdef vector[vector[int]] by_depth = vector[vector[int]](max_depth + 1)
        for i in range(<int>blocks.size()):
            by_depth[blocks[i].depth].push_back(i)
        cdef vector[int] order
        for depth in range(max_depth, 0, -1):
            for i in by_depth[depth]:
                order.push_back(i)
        for i in order:  # totals pass outward
            if blocks[i].links and blocks[i].outer >= 0:
                blocks[blocks[i].outer].chars += blocks[i].chars
                blocks[blocks[i].outer].links += blocks[i].links
        cdef Py_ssize_t read = 0
        cdef int outer
        for i in order:
            outer = blocks[i].outer
            if blocks[i].ruled_out or not blocks[i].links:
                if outer >= 0 and blocks[i].ruled_out:
                    blocks[outer].ruled_out = True
                continue
            size = self._text_size(blocks[i].node)
            read += size.chars
            if self.read_limit and read > self.read_limit:
                break
            if size.visible - blocks[i].chars <= 2 * blocks[i].links:
                self.link_blocks.push_back(blocks[i].node)
            elif outer >= 0:
                blocks[outer].ruled_out = True

    cdef bint _inside_regions(self, int node) noexcept:
        while node >= 0:
            if self.regions[node]:
                return True
            node = self.nodes[node].parent
        return False

    cdef int _title_heading(self) noexcept:
        """The page's title: its first h1, else h2, with words outside links."""
        cdef int tag, node, link
        cdef Py_ssize_t in_links
        for tag in (H1, H2):
            node = 0
            while node >= 0:
                if self._is(node, tag):
                    in_links = 0
                    link = self._next_within(node, node)
                    while link >= 0:
                        if self._is(link, ANCHOR):
                            in_links += self._text_size(link).visible
                        link = self._next_within(link, node)
                    if self._text_size(node).visible > in_links:
                        return node
                node = self._next_within(node, 0)
        return -1

    cdef vector[char] removed(self, int chrome):
        """The elements a chrome level removes (with their subtrees), as flags."""
        cdef vector[char] out = vector[char](self.nodes.size(), 0)
        cdef vector[char] before
        cdef int node, title
        if chrome == KEEP:
            return out
        if chrome == BLOCKS:
            return self._block_chrome()
        self._find_landmarks()
        for node in self.landmarks:
            out[node] = 1
        if chrome < LINKS_BEFORE_TITLE:
            return out
        self._judge_link_blocks()
        if chrome == LINKS_BEFORE_TITLE:
            title = self._title_heading()
            if title < 0:
                return out
            before.assign(self.nodes.size(), 0)
            node = 0
            while node >= 0 and node != title:
                if self.nodes[node].element:
                    before[node] = 1
                node = self._next_within(node, 0)
            node = self.nodes[title].parent
            while node >= 0:  # its ancestors open before it and hold it
                before[node] = 0
                node = self.nodes[node].parent
        for node in self.link_blocks:
            if self.any_region and self._inside_regions(node):
                continue
            if chrome == LINKS_BEFORE_TITLE and not before[node]:
                continue
            out[node] = 1
        return out

    cdef vector[char] _block_chrome(self):
        """blocks.drop_block_chrome: landmarks (a page-level header or footer holding an
        article or main element stays), form controls, and elements named as chrome that hold
        none named as content."""
        cdef size_t n = self.nodes.size()
        cdef vector[char] out = vector[char](n, 0)
        cdef vector[char] holds_main = vector[char](n, 0)
        cdef vector[char] holds_content = vector[char](n, 0)
        cdef int node, parent
        self._find_landmarks()
        for node in range(<int>n - 1, 0, -1):  # children come after their parents
            parent = self.nodes[node].parent
            if parent >= 0:
                if self.regions[node] or holds_main[node]:
                    holds_main[parent] = 1
                if self.nodes[node].names == _CONTENT_NAMED or holds_content[node]:
                    holds_content[parent] = 1
        for node in self.landmarks:
            if (self._is(node, PAGE_LANDMARK) and not self._is(node, LANDMARK)
                    and not (self.roles and self.nodes[node].role == LANDMARK_ROLE)
                    and holds_main[node]):
                continue
            out[node] = 1
        for node in range(<int>n):
            if not self.nodes[node].element:
                continue
            if self._is(node, CONTROL):
                out[node] = 1
            elif (self.nodes[node].names & _CHROME_NAMED and not self._is(node, MAIN | PAGE_ROOT)
                  and not holds_content[node]):
                out[node] = 1
        return out

    cdef tuple _block_text(self, vector[char]& gone):
        """blocks.blocks_of and blocks.keeps: the kept blocks' text, joined by spaces, and the
        content region's (`_kept_texts`)."""
        cdef string out
        out.reserve(self.texts.size())
        cdef vector[Span] spans
        cdef Span span
        span.start = span.end = 0
        span.words = span.link_words = 0
        cdef bint space = False, entered
        cdef int node = 0, links = 0
        cdef Py_ssize_t before
        cdef vector[int] owners  # the open block elements, innermost last
        owners.push_back(0)
        while node >= 0:
            entered = False
            if self.nodes[node].element:
                if node != 0 and gone[node]:
                    if self._has_tail(node):
                        space = True
                else:
                    entered = True
                    if self._is(node, BLOCK):
                        _close_span(spans, &span, out.size(), owners.back())
                        owners.push_back(node)
                        space = True
                    if self._is(node, ANCHOR):
                        links += 1
            else:
                before = span.words
                space = _append_words(out, <const unsigned char*>self.texts.data()
                                      + self.nodes[node].start, self.nodes[node].length, space,
                                      &span)
                if links and span.words > before:
                    span.link_words += span.words - before
                span.end = out.size()
            if entered and self.nodes[node].first_child >= 0:
                node = self.nodes[node].first_child
                continue
            while True:  # leave the node, and every element it was the last child of
                if self.nodes[node].element and (node == 0 or not gone[node]):
                    if self._is(node, BLOCK):
                        _close_span(spans, &span, out.size(), owners.back())
                        owners.pop_back()
                        space = True
                    if self._is(node, ANCHOR):
                        links -= 1
                if node == 0:
                    node = -1
                    break
                if self.nodes[node].next >= 0:
                    node = self.nodes[node].next
                    break
                node = self.nodes[node].parent
        _close_span(spans, &span, out.size(), owners.back())
        return self._kept_texts(spans, out)

    cdef tuple _kept_texts(self, vector[Span]& spans, string& out):
        """blocks.keeps over the blocks: their kept text joined by spaces, and the content
        region's (blocks.content_region; "" when it holds REGION_SHARE of the kept words)."""
        cdef vector[char] kept = vector[char](spans.size(), 0)
        cdef vector[Py_ssize_t] credit = vector[Py_ssize_t](self.nodes.size(), 0)
        cdef vector[int] credited
        cdef size_t at
        cdef int parent, grand, best = -1, node
        cdef Py_ssize_t kept_words = 0, region_words = 0
        for at in range(spans.size()):
            if _density(spans[at]) <= _MAX_LINK_DENSITY and (
                    spans[at].words > _SHORT_WORDS or self._in_structure(spans[at].owner)):
                kept[at] = 1
                kept_words += spans[at].words
                parent = self.nodes[spans[at].owner].parent
                if parent < 0:
                    parent = spans[at].owner
                if credit[parent] == 0:
                    credited.push_back(parent)
                credit[parent] += 2 * spans[at].words
                grand = self.nodes[parent].parent
                if grand >= 0:
                    if credit[grand] == 0:
                        credited.push_back(grand)
                    credit[grand] += spans[at].words
        for node in credited:
            if best < 0 or credit[node] > credit[best] or (
                    credit[node] == credit[best] and node < best):
                best = node
        cdef vector[char] inside = vector[char](spans.size(), 0)
        for at in range(spans.size()):
            if kept[at] and best >= 0 and self._within(spans[at].owner, best):
                inside[at] = 1
                region_words += spans[at].words
        text = _joined(spans, kept, out)
        if region_words * REGION_SHARE_DENOMINATOR >= kept_words * REGION_SHARE_NUMERATOR:
            return text, ""
        return text, _joined(spans, inside, out)

    cdef bint _in_structure(self, int owner) noexcept:
        """blocks.Block.structure: the block element holding it, or that element's parent, is a
        list item, table cell, pre or heading."""
        cdef int parent = self.nodes[owner].parent
        return self._is(owner, STRUCTURE) or (parent >= 0 and self._is(parent, STRUCTURE))

    cdef bint _within(self, int node, int ancestor) noexcept:
        while node > ancestor:
            node = self.nodes[node].parent
        return node == ancestor

    def text(self, int chrome):
        """(visible text with whitespace collapsed, whether the page marks its main content,
        the content region's text: only at BLOCKS, "" otherwise or when it is all the text)."""
        if self.nodes.size() == 0:
            return "", False, ""
        cdef vector[char] gone = self.removed(chrome)
        if chrome == BLOCKS:
            text, region = self._block_text(gone)
            return text, self.any_region, region
        cdef string out
        out.reserve(self.texts.size())  # at most the page's text, whitespace collapsed
        cdef bint space = False, descend
        cdef int node = 0
        while node >= 0:
            descend = True
            if self.nodes[node].element:
                if node != 0 and gone[node]:
                    descend = False
                    if self._has_tail(node):
                        space = True  # the tail joins the text before it with a space
                elif self._is(node, BLOCK):
                    space = True
            else:
                space = _append(out, <const unsigned char*>self.texts.data()
                                + self.nodes[node].start, self.nodes[node].length, space)
            node = self._after(node, descend, &space)
        # (KEEP never looks for regions; any other level found them in removed())
        return (PyUnicode_DecodeUTF8(out.c_str(), out.size(), "replace"),
                chrome != KEEP and self.any_region, "")

    cdef int _after(self, int node, bint descend, bint* space) noexcept:
        """_next_within, marking the end of each block element left on the way as a space."""
        if descend and self.nodes[node].first_child >= 0:
            return self.nodes[node].first_child
        while node != 0:
            if descend and self._is(node, BLOCK):
                space[0] = True
            if self.nodes[node].next >= 0:
                return self.nodes[node].next
            node = self.nodes[node].parent
            descend = True  # every element climbed out of was entered
        return -1


cdef inline size_t _decode(const unsigned char* text, size_t i, size_t length,
                           Py_UCS4* point) noexcept:
    """The width of the UTF-8 character at text[i], its code point into `point`; a byte that
    does not start one (libxml2 never hands such text out) is one U+FFFD, as "replace" decodes."""
    cdef unsigned char byte = text[i]
    if byte < 0x80:
        point[0] = byte
        return 1
    if byte >= 0xF0 and i + 3 < length:
        point[0] = ((byte & 0x07) << 18) | ((text[i + 1] & 0x3F) << 12) | (
            (text[i + 2] & 0x3F) << 6) | (text[i + 3] & 0x3F)
        return 4
    if byte >= 0xE0 and i + 2 < length:
        point[0] = ((byte & 0x0F) << 12) | ((text[i + 1] & 0x3F) << 6) | (text[i + 2] & 0x3F)
        return 3
    if byte >= 0xC0 and i + 1 < length:
        point[0] = ((byte & 0x1F) << 6) | (text[i + 1] & 0x3F)
        return 2
    point[0] = 0xFFFD
    return 1


cdef inline size_t _piece(const unsigned char* text, size_t i, size_t length,
                          bint* blank) noexcept:
    """The width of what begins at `i`: a run of ASCII word bytes, taken at once (a character
    at a time cost a std::string append each), else one character; `blank`: whether that
    character is whitespace (Py_UNICODE_ISSPACE, as str.split)."""
    cdef size_t end = i
    cdef Py_UCS4 point
    while end < length and text[end] < 0x80 and not Py_UNICODE_ISSPACE(text[end]):
        end += 1
    if end > i:
        blank[0] = False
        return end - i
    end = _decode(text, i, length, &point)
    blank[0] = Py_UNICODE_ISSPACE(point)
    return end


cdef bint _append(string& out, const unsigned char* text, size_t length, bint space) noexcept:
    """Append text to out, runs of whitespace (Py_UNICODE_ISSPACE, as str.split) as one space,
    none at the start; returns whether a space is pending."""
    cdef size_t i = 0, width
    cdef bint blank
    while i < length:
        width = _piece(text, i, length, &blank)
        if blank:
            space = True
        else:
            if space and out.size():
                out.push_back(b" ")
            space = False
            out.append(<const char*>text + i, width)
        i += width
    return space


cdef bint _append_words(string& out, const unsigned char* text, size_t length, bint space,
                        Span* span) noexcept:
    """_append, counting the words that begin in `text` into `span` (a word begins at a
    character other than whitespace after whitespace, a block boundary or nothing) and marking
    where its first word begins."""
    cdef size_t i = 0, width
    cdef bint blank
    while i < length:
        width = _piece(text, i, length, &blank)
        if blank:
            space = True
        else:
            if space or out.size() == 0:
                if space and out.size():
                    out.push_back(b" ")
                if span.words == 0:
                    span.start = out.size()
                span.words += 1
            space = False
            out.append(<const char*>text + i, width)
        i += width
    return space


cdef void _close_span(vector[Span]& spans, Span* span, size_t end, int owner) noexcept:
    """End the block being read (kept when it has words; `owner` the block element holding
    it) and start the next at `end`."""
    if span.words:
        span.end = end
        span.owner = owner
        spans.push_back(span[0])
    span.start = span.end = end
    span.words = span.link_words = 0


cdef double _density(const Span& span) noexcept:
    return <double>span.link_words / span.words if span.words else 0.0


cdef str _joined(vector[Span]& spans, vector[char]& chosen, string& out):
    """The chosen blocks' text, joined by spaces."""
    cdef string joined
    cdef size_t at
    for at in range(spans.size()):
        if chosen[at]:
            if joined.size():
                joined.push_back(b" ")
            joined.append(out, spans[at].start, spans[at].end - spans[at].start)
    return PyUnicode_DecodeUTF8(joined.c_str(), joined.size(), "replace")


# --- libxml2 (lxml) -----------------------------------------------------------------------------


cdef struct _KnownName:
    string name
    int bits


cdef class _Libxml2Kinds:
    """Tag kinds by name pointer: libxml2 keeps a parser's names in one dictionary, so the
    pointer is the key (a name held twice is only looked up twice). The name is compared too:
    an event reader's cache outlives a page, and a pointer could be reused by another name."""

    cdef unordered_map[uintptr_t, _KnownName] known

    cdef int of(self, const char* name) except -1:
        cdef uintptr_t key = <uintptr_t>name
        cdef unordered_map[uintptr_t, _KnownName].iterator found = self.known.find(key)
        if found != self.known.end() and strcmp(deref(found).second.name.c_str(), name) == 0:
            return deref(found).second.bits
        cdef _KnownName known
        known.name = string(name)
        known.bits = _kind_of_name(name, known.name.size())
        self.known[key] = known
        return known.bits


cdef int _libxml2_role(xmlNode* node) except -1:
    cdef xmlAttr* attr = node.properties
    cdef xmlNode* part
    cdef string value
    while attr != NULL:
        if attr.ns == NULL and strcmp(<const char*>attr.name, b"role") == 0:
            part = attr.children
            while part != NULL:
                if part.content != NULL:
                    value.append(<const char*>part.content)
                part = part.next
            return _role_of(value)
        attr = <xmlAttr*>attr.next
    return NO_ROLE


cdef int _libxml2_names(xmlNode* node) noexcept:
    """_name_kind of an element's class and id attributes."""
    cdef xmlAttr* attr = node.properties
    cdef xmlNode* part
    cdef int kind = 0
    while attr != NULL:
        if attr.ns == NULL and (strcmp(<const char*>attr.name, b"class") == 0
                                or strcmp(<const char*>attr.name, b"id") == 0):
            part = attr.children
            while part != NULL:
                if part.content != NULL:
                    kind |= _name_kind(<const char*>part.content,
                                       strlen(<const char*>part.content))
                part = part.next
        attr = <xmlAttr*>attr.next
    return kind


def chrome_walk(cetree._Element root not None, bint roles, Py_ssize_t read_limit):
    """A walk of lxml's tree (its invisible elements stripped, as extract._lxml_tree leaves it)
    whose .text(level) may be asked for several chrome levels."""
    cdef _Tree tree = _Tree(roles, read_limit)
    cdef _Libxml2Kinds kinds = _Libxml2Kinds()
    cdef xmlNode* top = root._c_node
    cdef xmlNode* node = top
    cdef int bits, index
    while node != NULL:
        if node.type == ELEMENT_NODE:
            bits = kinds.of(<const char*>node.name)
            if not bits & INVISIBLE:  # (extract._lxml_tree strips them: for other callers)
                index = tree.open_element(bits)
                if node.properties != NULL:
                    if roles:
                        tree.nodes[index].role = _libxml2_role(node)
                    tree.nodes[index].names = _libxml2_names(node)
                if node.children != NULL:
                    node = node.children
                    continue
                tree.close_element()
        elif node.type == TEXT_NODE or node.type == CDATA_NODE:
            if node.content != NULL:
                tree.add_text(<const char*>node.content, strlen(<const char*>node.content))
        while node != top and node.next == NULL:  # climb out of the finished elements
            node = <xmlNode*>node.parent
            tree.close_element()
        if node == top:
            break
        node = node.next
    return tree


cdef xmlNode* _libxml2_after(xmlNode* node, xmlNode* top, bint descend) noexcept:
    """The node after `node` in document order inside `top`'s subtree (NULL at its end)."""
    if descend and node.type == ELEMENT_NODE and node.children != NULL:
        return node.children
    while node != top:
        if node.next != NULL:
            return node.next
        node = <xmlNode*>node.parent
    return NULL


def libxml2_title(cetree._Element root not None):
    """lxml's string(root.find(".//title")): the text and CDATA below the first title element
    under `root`, or None; a walk that stops there (cheaper than ElementPath's find)."""
    cdef xmlNode* top = root._c_node
    cdef xmlNode* node = top.children
    cdef xmlNode* inner
    cdef string text
    while node != NULL:
        if node.type == ELEMENT_NODE and strcmp(<const char*>node.name, b"title") == 0:
            inner = node.children
            while inner != NULL:
                if (inner.type == TEXT_NODE or inner.type == CDATA_NODE) and inner.content != NULL:
                    text.append(<const char*>inner.content)
                inner = _libxml2_after(inner, node, True)
            return PyUnicode_DecodeUTF8(text.c_str(), text.size(), "replace")
        node = _libxml2_after(node, top, True)
    return None


# --- libxml2's parser without its tree (SAX events) -------------------------------------------

# libxml2's types and option bits, from the headers lxml ships; its functions are bound at run
# time from lxml's own library (_load_libxml2), which exports them: the one libxml2 of the process.
# The structs and the SAX handler's layout are those of the headers, so the reader runs only
# against the libxml2 they came from: another one may lay them out otherwise and corrupt memory.
cdef extern from "libxml/HTMLparser.h" nogil:
    int HTML_SAX_OPTIONS "(HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_COMPACT | XML_PARSE_HUGE)"

ctypedef xmlParserCtxt* (*_new_context_t)(const xmlSAXHandler* handler, void* data) noexcept nogil
ctypedef xmlDoc* (*_read_memory_t)(xmlParserCtxt* context, const char* buffer, int size,
                                   const char* url, const char* encoding,
                                   int options) noexcept nogil
ctypedef void (*_context_t)(xmlParserCtxt* context) noexcept nogil
ctypedef void (*_set_errors_t)(xmlParserCtxt* context, xmlStructuredErrorFunc handler,
                               void* data) noexcept nogil
ctypedef void (*_free_doc_t)(xmlDoc* doc) noexcept nogil
ctypedef int (*_dict_size_t)(xmlDict* names) noexcept nogil

cdef struct _Libxml2:
    _new_context_t new_context
    _read_memory_t read_memory
    _context_t free_context
    _context_t stop
    _set_errors_t set_error_handler
    _free_doc_t free_doc
    _dict_size_t dict_size

cdef _Libxml2 _libxml2
cdef bint _libxml2_ready = False

# A context keeps the names of every page it read (libxml2's dictionary): past this many a fresh
# one is made, so a crawl of made-up tag names cannot grow it without end.
cdef int MAX_KEPT_NAMES = 50_000


cdef void* _loaded_library(str path, str owner) except NULL:
    """dlopen's handle of an extension Python has loaded (its functions are bound from it)."""
    cdef bytes encoded = path.encode()
    cdef void* library = dlopen(encoded, RTLD_NOW | RTLD_NOLOAD)
    if library == NULL:
        raise ImportError(f"{owner}'s library cannot be opened")
    return library


cdef void* _symbol(void* library, const char* name) except NULL:
    cdef void* found = dlsym(library, name)
    if found == NULL:
        raise ImportError(f"no {name.decode()} in the library")
    return found


def _version(int number):
    """libxml2's version number (21406) as a tuple (2, 14, 6), lxml's LIBXML_VERSION form."""
    return number // 10000, number // 100 % 100, number % 100


def _dotted(version):
    return ".".join(map(str, version))


# The libxml2 of the headers this extension was compiled with (lxml's includes).
LIBXML2_HEADERS = _version(HEADERS_VERSION)


cdef void* _lxml_library() except NULL:
    import lxml.etree

    return _loaded_library(lxml.etree.__file__, "lxml")


def running_libxml2():
    """The version of the libxml2 lxml runs on, from its own xmlParserVersion ("21406", maybe
    followed by a suffix), as a tuple; ImportError when it cannot be read."""
    cdef const char** found = <const char**>_symbol(_lxml_library(), b"xmlParserVersion")
    cdef bytes text = found[0] if found[0] != NULL else b""
    cdef Py_ssize_t digits = 0
    while digits < len(text) and 0x30 <= text[digits] <= 0x39:
        digits += 1
    if digits == 0:
        raise ImportError(f"libxml2's version {text!r} cannot be read")
    return _version(int(text[:digits]))


def _load_libxml2():
    """Bind the libxml2 functions of lxml's extension (once); ImportError when the running
    libxml2 is not the one of the headers (LIBXML2_HEADERS) or lacks them (older than 2.13)."""
    global _libxml2_ready
    if _libxml2_ready:
        return
    running = running_libxml2()
    if running != LIBXML2_HEADERS:
        raise ImportError(f"running libxml2 {_dotted(running)} differs from headers "
                          f"{_dotted(LIBXML2_HEADERS)}")
    if running < (2, 13):
        raise ImportError(f"libxml2 {_dotted(running)} is older than 2.13")
    cdef void* library = _lxml_library()
    _libxml2.new_context = <_new_context_t>_symbol(library, b"htmlNewSAXParserCtxt")
    _libxml2.read_memory = <_read_memory_t>_symbol(library, b"htmlCtxtReadMemory")
    _libxml2.free_context = <_context_t>_symbol(library, b"htmlFreeParserCtxt")
    _libxml2.stop = <_context_t>_symbol(library, b"xmlStopParser")
    _libxml2.set_error_handler = <_set_errors_t>_symbol(library, b"xmlCtxtSetErrorHandler")
    _libxml2.free_doc = <_free_doc_t>_symbol(library, b"xmlFreeDoc")
    _libxml2.dict_size = <_dict_size_t>_symbol(library, b"xmlDictSize")
    _libxml2_ready = True


cdef class _Libxml2Reader:
    """lxml's HTML parse of a page (its parser options, UTF-8 declared) as SAX events that fill a
    _Tree directly: the walk of chrome_walk over the tree libxml2 would have built, without
    building it (its nodes' allocation and freeing are half of the parse).

    The events are those libxml2's own tree builder (xmlSAX2*) receives, read the way it reads
    them: an element under the one open, text into the open element (none outside the root),
    CDATA blocks as text (the walk reads CDATA nodes as text), comments and processing
    instructions dropped (the parser's remove_comments, remove_pis). Its depth limit is the tree
    builder's, so it is applied here: 2048 open elements (ValueError, as after lxml)."""

    cdef xmlParserCtxt* context
    cdef xmlSAXHandler handler
    cdef _Tree tree
    cdef _Libxml2Kinds kinds  # the context's names (kept with its dictionary)
    cdef int depth  # open elements, the invisible ones and those inside them too
    cdef int skipped  # open elements from the outermost invisible one in
    cdef int roots  # elements opened at the top: the first is lxml's root
    cdef int title_depth  # depth of the first title while inside it; 0 before it, -1 after
    cdef string title
    cdef bint too_deep  # the tree builder's depth limit, or a resource limit of the parser
    cdef object failure  # an exception raised while filling (MemoryError)

    def __cinit__(self):
        _load_libxml2()
        # only the events that shape the text: no document, no DTD, no comments, no PIs
        memset(&self.handler, 0, sizeof(xmlSAXHandler))
        self.handler.initialized = 1
        # (the GIL is held while libxml2 calls them: read() parses with it)
        self.handler.startElement = <startElementSAXFunc>_sax_start
        self.handler.endElement = <endElementSAXFunc>_sax_end
        self.handler.characters = <charactersSAXFunc>_sax_text
        self.handler.cdataBlock = <cdataBlockSAXFunc>_sax_text
        self.context = NULL
        self._new_context()

    cdef int _new_context(self) except -1:
        if self.context != NULL:
            _libxml2.free_context(self.context)
        self.kinds = _Libxml2Kinds()
        self.context = _libxml2.new_context(&self.handler, <void*>self)
        if self.context == NULL:
            raise MemoryError("libxml2 could not create a parser")
        _libxml2.set_error_handler(self.context, <xmlStructuredErrorFunc>_sax_error,
                                   <void*>self)
        return 0

    def __dealloc__(self):
        if self.context != NULL:
            _libxml2.free_context(self.context)

    cdef void fail(self, object failure) noexcept:
        if self.failure is None:
            self.failure = failure
        _libxml2.stop(self.context)

    cdef void start(self, const char* name, const char** attributes) noexcept:
        cdef int bits, index
        if self.depth >= MAX_DEPTH:
            self.too_deep = True
            _libxml2.stop(self.context)
            return
        self.depth += 1
        if self.depth == 1:
            self.roots += 1
        if (self.title_depth == 0 and self.depth > 1 and self.roots == 1
                and strcmp(name, b"title") == 0):
            self.title_depth = self.depth
        if self.skipped:
            self.skipped += 1
            return
        try:
            bits = self.kinds.of(name)
            if bits & INVISIBLE or self.roots > 1:  # not text, or outside lxml's root
                self.skipped = 1
                return
            index = self.tree.open_element(bits)
            if attributes != NULL:
                if self.tree.roles:
                    self.tree.nodes[index].role = _sax_role(attributes)
                self.tree.nodes[index].names = _sax_names(attributes)
        except BaseException as failure:
            self.fail(failure)

    cdef void end(self) noexcept:
        if self.depth == 0:
            return
        if self.title_depth == self.depth:
            self.title_depth = -1
        self.depth -= 1
        if self.skipped:
            self.skipped -= 1
        else:
            self.tree.close_element()

    cdef void text(self, const char* text, int length) noexcept:
        if self.title_depth > 0:
            self.title.append(text, length)
        if self.skipped or self.depth == 0 or length <= 0:
            return
        try:
            self.tree.append_text(text, <size_t>length)
        except BaseException as failure:
            self.fail(failure)

    def read(self, const unsigned char[::1] data not None, bint roles, Py_ssize_t read_limit):
        """(walk, title or None) of UTF-8 markup: chrome_walk's walk of lxml's tree and
        libxml2_title's title, from the parse's events."""
        if data.shape[0] > 0x7FFFFFFF:
            raise ValueError("markup over 2 GiB")
        self.tree = _Tree(roles, read_limit)
        self.depth = self.skipped = self.roots = self.title_depth = 0
        self.title.clear()
        self.too_deep = False
        self.failure = None
        cdef const char* markup = b""
        if data.shape[0]:
            markup = <const char*>&data[0]
        cdef xmlDoc* doc = _libxml2.read_memory(self.context, markup, <int>data.shape[0], NULL,
                                                b"UTF-8", HTML_SAX_OPTIONS)
        if doc != NULL:  # (no document is built without the startDocument event)
            _libxml2.free_doc(doc)
        tree, self.tree = self.tree, None
        if _libxml2.dict_size(self.context.dict) > MAX_KEPT_NAMES:
            self._new_context()
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        if self.too_deep:
            raise ValueError("markup nested beyond libxml2's depth limit")
        title = (PyUnicode_DecodeUTF8(self.title.c_str(), self.title.size(), "replace")
                 if self.title_depth else None)
        return tree, title


cdef void _sax_start(void* reader, const xmlChar* name, const xmlChar** attributes) noexcept:
    (<_Libxml2Reader>reader).start(<const char*>name, <const char**>attributes)


cdef void _sax_end(void* reader, const xmlChar* name) noexcept:
    (<_Libxml2Reader>reader).end()


cdef void _sax_text(void* reader, const xmlChar* text, int length) noexcept:
    (<_Libxml2Reader>reader).text(<const char*>text, length)


cdef void _sax_error(void* reader, const xmlError* error) noexcept:
    if error != NULL and error.code == XML_ERR_RESOURCE_LIMIT:
        (<_Libxml2Reader>reader).too_deep = True


cdef int _sax_names(const char** attributes) noexcept:
    """_name_kind of a start tag's class and id values."""
    cdef int i = 0, kind = 0
    while attributes[i] != NULL:
        if attributes[i + 1] != NULL and (strcmp(attributes[i], b"class") == 0
                                          or strcmp(attributes[i], b"id") == 0):
            kind |= _name_kind(attributes[i + 1], strlen(attributes[i + 1]))
        i += 2
    return kind


cdef int _sax_role(const char** attributes) except -1:
    """_libxml2_role from a start tag's (name, value) pairs (a value-less attribute: "")."""
    cdef int i = 0
    while attributes[i] != NULL:
        if strcmp(attributes[i], b"role") == 0:
            value = attributes[i + 1] if attributes[i + 1] != NULL else b""
            return _role_of(value)
        i += 2
    return NO_ROLE


_READERS = threading.local()  # a libxml2 parser context is one thread's


def libxml2_walk(const unsigned char[::1] data not None, bint roles, Py_ssize_t read_limit):
    """(walk, title or None) of UTF-8 markup, as extract reads lxml's tree of it (chrome_walk
    and libxml2_title) but from libxml2's parse events: ValueError beyond its depth limit;
    ImportError where this libxml2 cannot be driven so (the caller parses a tree)."""
    reader = getattr(_READERS, "reader", None)
    if reader is None:
        reader = _READERS.reader = _Libxml2Reader()
    return (<_Libxml2Reader>reader).read(data, roles, read_limit)


cdef inline unsigned char _libxml2_control(unsigned char c) noexcept nogil:
    """An ASCII control other than tab, LF and CR, or DEL: what extract._CONTROL_TO_SPACE
    replaces before libxml2 reads the bytes."""
    return ((c < 0x20) & (c != 0x09) & (c != 0x0A) & (c != 0x0D)) | (c == 0x7F)


cdef inline bint _has_control_bytes(const unsigned char* data, size_t n) noexcept nogil:
    """Whether the bytes hold a `_libxml2_control`. Blocks of 64 bytes with no branch inside,
    which the compiler turns into vector code; most pages hold none and skip the copy."""
    cdef size_t at = 0, i
    cdef unsigned char found = 0
    while at + 64 <= n:
        for i in range(64):
            found |= _libxml2_control(data[at + i])
        if found:
            return True
        at += 64
    while at < n:
        found |= _libxml2_control(data[at])
        at += 1
    return found != 0


cdef inline unsigned char _sniffed_control(unsigned char c) noexcept nogil:
    return ((c >= 0x01) & (c <= 0x08)) | ((c >= 0x0E) & (c <= 0x1F)) | (c == 0x7F)


def sniff_counts(const unsigned char[::1] data not None):
    """(control bytes, NUL bytes) of `data` as sniff.binary_kind counts them: C0 but NUL, tab,
    newline, vertical tab, form feed and carriage return, plus DEL; and NULs apart. Blocks of
    64 bytes counted with no branch, which the compiler turns into vector code (bytes.translate
    copied the sample to count what it deleted)."""
    cdef size_t n = data.shape[0], at = 0, i
    cdef Py_ssize_t controls = 0, nuls = 0
    cdef unsigned char block_controls, block_nuls, c
    if n == 0:
        return 0, 0
    cdef const unsigned char* start = &data[0]
    with nogil:
        while at + 64 <= n:
            block_controls = block_nuls = 0
            for i in range(64):
                c = start[at + i]
                block_controls += _sniffed_control(c)
                block_nuls += c == 0
            controls += block_controls
            nuls += block_nuls
            at += 64
        while at < n:
            c = start[at]
            controls += _sniffed_control(c)
            nuls += c == 0
            at += 1
    return controls, nuls


def markup_facts(const unsigned char[::1] data not None, Py_ssize_t max_tags,
                 Py_ssize_t long_tag_chars):
    """What extract.html_to_text asks of a page's UTF-8 before choosing a reader, in one pass:
    (whether b"role" occurs, whether it holds more than `max_tags` "<", whether a tag runs long:
    "<", an ASCII letter, then `long_tag_chars` or more characters that are neither "<" nor ">",
    as extract._LONG_TAG matches in the decoded text; characters are the bytes that do not
    continue one; whether it holds a control byte that libxml2 must not see). A page too short
    to pass a cap is not scanned for it. Replacing control bytes by spaces changes none of the
    first three answers: they may be asked before the replacement."""
    cdef const unsigned char* start
    cdef const unsigned char* end
    cdef const unsigned char* at
    cdef const unsigned char* tag
    cdef const unsigned char* following
    cdef const unsigned char* stop
    cdef const unsigned char* close
    cdef Py_ssize_t n = data.shape[0], tags = 0, chars
    cdef bint role = False, long_tag = False, controls = False
    cdef bint count = n > max_tags  # a "<" is a byte: fewer bytes, fewer tags
    cdef bint measure = n > long_tag_chars  # and no tag runs longer than the page
    if n == 0:
        return False, False, False, False
    start = &data[0]
    end = start + n
    with nogil:
        controls = _has_control_bytes(start, <size_t>n)
        role = memmem(start, <size_t>n, b"role", 4) != NULL
        at = <const unsigned char*>memchr(start, 0x3C, <size_t>n) if count or measure else NULL
        while at != NULL:
            tags += 1
            following = <const unsigned char*>memchr(at + 1, 0x3C, <size_t>(end - at - 1))
            tag = at + 1
            if measure and tag < end and (0x41 <= tag[0] <= 0x5A or 0x61 <= tag[0] <= 0x7A):
                # The tag runs to its first ">" or the next "<", found by memchr: a tag fewer
                # bytes long than the cap has fewer characters too, so only a tag of the cap's
                # bytes or more has its characters counted.
                tag += 1
                stop = following if following != NULL else end
                if <Py_ssize_t>(stop - tag) >= long_tag_chars:
                    close = <const unsigned char*>memchr(tag, 0x3E, <size_t>(stop - tag))
                    if close != NULL:
                        stop = close
                if <Py_ssize_t>(stop - tag) >= long_tag_chars:
                    chars = 0
                    while tag < stop:
                        chars += (tag[0] & 0xC0) != 0x80
                        tag += 1
                    long_tag = chars >= long_tag_chars
                    measure = not long_tag
            if not count and not measure:
                break
            at = following
    return role, tags > max_tags, long_tag, controls



def utf8_valid(const unsigned char[::1] data not None):
    """Whether `data.decode("utf-8")` succeeds (RFC 3629: no overlong form, no surrogate, none
    above U+10FFFF), without building the str: a page read from its own bytes needs no text."""
    cdef size_t n = data.shape[0]
    cdef bint valid
    if n == 0:
        return True
    with nogil:
        valid = _utf8_valid(&data[0], n)
    return valid


cdef bint _utf8_valid(const unsigned char* s, size_t n) noexcept nogil:
    """utf8_valid's loop. 16 ASCII bytes pass with one test of two 8-byte words; a character of
    two to four bytes is checked by the table of RFC 3629."""
    cdef size_t at = 0
    cdef uint64_t first, last
    cdef unsigned char c, second
    while at < n:
        if at + 16 <= n:
            memcpy(&first, s + at, 8)
            memcpy(&last, s + at + 8, 8)
            if ((first | last) & <uint64_t>0x8080808080808080) == 0:
                at += 16
                continue
        c = s[at]
        if c < 0x80:
            at += 1
        elif 0xC2 <= c <= 0xDF:
            if at + 1 >= n or (s[at + 1] & 0xC0) != 0x80:
                return False
            at += 2
        elif 0xE0 <= c <= 0xEF:
            if at + 2 >= n:
                return False
            second = s[at + 1]
            if (second & 0xC0) != 0x80 or (s[at + 2] & 0xC0) != 0x80 or (
                    c == 0xE0 and second < 0xA0) or (c == 0xED and second > 0x9F):
                return False
            at += 3
        elif 0xF0 <= c <= 0xF4:
            if at + 3 >= n:
                return False
            second = s[at + 1]
            if (second & 0xC0) != 0x80 or (s[at + 2] & 0xC0) != 0x80 or (
                    s[at + 3] & 0xC0) != 0x80 or (c == 0xF0 and second < 0x90) or (
                    c == 0xF4 and second > 0x8F):
                return False
            at += 4
        else:
            return False
    return True
