# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""Site chrome and visible text of a parsed page, read in C from lxml's own libxml2 tree.

The same rules as `extract.drop_chrome` and `extract._python_walk` (the pure-Python reference,
kept for installs without a compiler): landmarks, link-only blocks judged innermost first under a
read limit, the blocks before the title, block boundaries as spaces, whitespace collapsed as
`str.split` does. The tree is only read, never changed, so one parse serves every chrome level.
On a PostgreSQL manual page (13.8 KB) the Python walk took 0.4-0.9 ms, this one 40-190 us.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from cython.operator cimport dereference as deref
from libc.string cimport strcmp
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.unordered_set cimport unordered_set
from libcpp.vector cimport vector

cimport lxml.includes.etreepublic as cetree
from lxml.includes.tree cimport (
    XML_CDATA_SECTION_NODE as CDATA_NODE, XML_ELEMENT_NODE as ELEMENT_NODE,
    XML_TEXT_NODE as TEXT_NODE, xmlAttr, xmlNode,
)

cdef extern from "Python.h":
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch)

from neardup_pipeline.htmltags import (
    BLOCK_TAGS, LANDMARK_ROLES, LANDMARK_TAGS, LINK_BLOCK_TAGS, MAIN_TAGS, PAGE_LANDMARK_TAGS,
    SECTIONING_TAGS,
)

cetree.import_lxml__etree()

ctypedef xmlNode* NodePtr

# extract.Chrome
cdef enum:
    KEEP = 0
    LANDMARKS = 1
    LINKS_BEFORE_TITLE = 2
    LINKS = 3

# What a tag name is, as bits (one element may be several: "main" is both MAIN and SECTIONING).
cdef enum:
    BLOCK = 1
    LINK_BLOCK = 2
    LANDMARK = 4
    PAGE_LANDMARK = 8
    SECTIONING = 16
    MAIN = 32

cdef list _KINDS = [(BLOCK, BLOCK_TAGS), (LINK_BLOCK, LINK_BLOCK_TAGS), (LANDMARK, LANDMARK_TAGS),
                    (PAGE_LANDMARK, PAGE_LANDMARK_TAGS), (SECTIONING, SECTIONING_TAGS),
                    (MAIN, MAIN_TAGS)]
cdef unordered_map[string, int] _KIND_OF_NAME
for _bit, _names in _KINDS:
    for _name in _names:
        _KIND_OF_NAME[_name.encode()] = _KIND_OF_NAME[_name.encode()] | _bit


cdef inline bint _named(xmlNode* node, const char* name) noexcept:
    return strcmp(<const char*>node.name, name) == 0


cdef class _Tags:
    """What each tag name is (the bits above), looked up once per distinct name: libxml2 keeps
    a document's names in one dictionary, so the name pointer is the key (a name held twice is
    only looked up twice)."""

    cdef unordered_map[size_t, int] known  # name pointer -> kind bits

    cdef int kind(self, xmlNode* node) noexcept:
        cdef size_t key = <size_t>node.name
        cdef unordered_map[size_t, int].iterator found = self.known.find(key)
        if found != self.known.end():
            return deref(found).second
        cdef unordered_map[string, int].iterator named = _KIND_OF_NAME.find(
            string(<const char*>node.name))
        cdef int bits = deref(named).second if named != _KIND_OF_NAME.end() else 0
        self.known[key] = bits
        return bits

    cdef inline bint is_(self, xmlNode* node, int bits) noexcept:
        return node.type == ELEMENT_NODE and (self.kind(node) & bits) != 0


cdef inline bint _is_element(xmlNode* node) noexcept:
    return node != NULL and node.type == ELEMENT_NODE


cdef inline bint _is_text(xmlNode* node) noexcept:
    return node.type == TEXT_NODE or node.type == CDATA_NODE


cdef inline xmlNode* _parent(xmlNode* node) noexcept:
    """The parent element, or NULL at the root (lxml's getparent)."""
    cdef xmlNode* up = node.parent
    return up if _is_element(up) else NULL


cdef inline xmlNode* _next_within(xmlNode* node, xmlNode* top) noexcept:
    """The node after `node` in document order inside `top`'s subtree (NULL at its end)."""
    if node.type == ELEMENT_NODE and node.children != NULL:
        return node.children
    while node != top:
        if node.next != NULL:
            return node.next
        node = node.parent
    return NULL


cdef struct TextSize:
    Py_ssize_t chars  # code points (len(str))
    Py_ssize_t visible  # code points other than " ", "\n", "\t", "\r" (extract._visible_chars)


cdef void _count(const unsigned char* text, TextSize* size) noexcept:
    cdef Py_ssize_t i = 0
    cdef unsigned char byte
    while text[i]:
        byte = text[i]
        if (byte & 0xC0) != 0x80:
            size.chars += 1
            if byte != 32 and byte != 10 and byte != 9 and byte != 13:
                size.visible += 1
        i += 1


cdef TextSize _text_size(xmlNode* top) noexcept:
    """Size of an element's text content (extract._text_of: text below it, not its tail)."""
    cdef TextSize size
    size.chars = 0
    size.visible = 0
    cdef xmlNode* node = _next_within(top, top)
    while node != NULL:
        if _is_text(node) and node.content != NULL:
            _count(<const unsigned char*>node.content, &size)
        node = _next_within(node, top)
    return size


cdef bint _has_tail(xmlNode* node) noexcept:
    """Whether text follows the element before its next sibling element (lxml's .tail)."""
    cdef xmlNode* after = node.next
    while after != NULL and _is_text(after):
        if after.content != NULL and after.content[0] != 0:
            return True
        after = after.next
    return False


cdef struct Block:
    xmlNode* node
    int outer  # index of the next link block around it, -1 for none
    int depth  # link blocks around it, itself included
    Py_ssize_t chars  # link text, in it and (after the totals pass) in the blocks inside it
    Py_ssize_t links
    bint ruled_out


cdef class _Walk:
    """One page's chrome decision; the tree is read, never changed."""

    cdef object tree  # the root element: keeps lxml's document (and so every node) alive
    cdef xmlNode* root
    cdef bint roles
    cdef Py_ssize_t read_limit
    cdef unordered_set[NodePtr] regions  # main content the page marks
    cdef vector[NodePtr] landmarks
    cdef vector[NodePtr] link_blocks  # judged link-only, in the order judged
    cdef bint found  # landmarks and regions
    cdef bint judged  # link blocks
    cdef _Tags tags

    def __cinit__(self, cetree._Element root not None, bint roles, Py_ssize_t read_limit):
        self.tree = root
        self.root = root._c_node
        self.roles = roles
        self.read_limit = read_limit
        self.found = False
        self.judged = False
        self.tags = _Tags()

    cdef str _role(self, xmlNode* node):
        """The element's role attribute as extract._role reads it, or None without one."""
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
                return PyUnicode_DecodeUTF8(value.c_str(), value.size(), "replace").strip().lower()
            attr = <xmlAttr*>attr.next
        return None

    cdef void _find_landmarks(self):
        if self.found:
            return
        self.found = True
        cdef xmlNode* node = self.root
        cdef xmlNode* up
        cdef bint sectioned
        cdef str role
        while node != NULL:
            if node.type == ELEMENT_NODE:
                if self.tags.is_(node, MAIN):
                    self.regions.insert(node)
                if self.tags.is_(node, LANDMARK):
                    self.landmarks.push_back(node)
                elif self.tags.is_(node, PAGE_LANDMARK):
                    sectioned = False
                    up = _parent(node)
                    while up != NULL and not sectioned:
                        sectioned = self.tags.is_(up, SECTIONING)
                        up = _parent(up)
                    if not sectioned:
                        self.landmarks.push_back(node)
                if self.roles and node.properties != NULL:
                    role = self._role(node)
                    if role == "main":
                        self.regions.insert(node)
                    elif role in LANDMARK_ROLES:
                        self.landmarks.push_back(node)
            node = _next_within(node, self.root)

    cdef void _judge_link_blocks(self):
        """extract._link_only_blocks: each link counts toward its innermost link block, totals
        pass outward, blocks are judged deepest first (in order of discovery within a depth)
        and one with words of its own rules out the blocks around it unread."""
        if self.judged:
            return
        self.judged = True
        cdef unordered_map[NodePtr, int] innermost  # walked element -> its innermost block
        cdef vector[Block] blocks
        cdef vector[NodePtr] walked
        cdef xmlNode* node = self.root
        cdef xmlNode* step
        cdef int inner, i, depth, max_depth = 0
        cdef Block block
        cdef TextSize size
        while node != NULL:
            if node.type == ELEMENT_NODE and _named(node, b"a"):
                walked.clear()
                step = _parent(node)
                while step != NULL and innermost.find(step) == innermost.end():
                    walked.push_back(step)
                    step = _parent(step)
                inner = innermost[step] if step != NULL else -1
                for i in range(<int>walked.size() - 1, -1, -1):
                    step = walked[i]
                    if self.tags.is_(step, LINK_BLOCK):
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
                    size = _text_size(node)
                    blocks[inner].chars += size.visible
                    blocks[inner].links += 1
            node = _next_within(node, self.root)
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
            size = _text_size(blocks[i].node)
            read += size.chars
            if self.read_limit and read > self.read_limit:
                break
            if size.visible - blocks[i].chars <= 2 * blocks[i].links:
                self.link_blocks.push_back(blocks[i].node)
            elif outer >= 0:
                blocks[outer].ruled_out = True

    cdef bint _inside_regions(self, xmlNode* node) noexcept:
        while node != NULL:
            if self.regions.count(node):
                return True
            node = _parent(node)
        return False

    cdef xmlNode* _title(self) noexcept:
        """The page's title: its first h1, else h2, with words outside links."""
        cdef const char* tag
        cdef xmlNode* node
        cdef xmlNode* link
        cdef Py_ssize_t in_links
        for tag in (b"h1", b"h2"):
            node = self.root
            while node != NULL:
                if node.type == ELEMENT_NODE and _named(node, tag):
                    in_links = 0
                    link = _next_within(node, node)
                    while link != NULL:
                        if link.type == ELEMENT_NODE and _named(link, b"a"):
                            in_links += _text_size(link).visible
                        link = _next_within(link, node)
                    if _text_size(node).visible > in_links:
                        return node
                node = _next_within(node, self.root)
        return NULL

    cdef unordered_set[NodePtr] removed(self, int chrome):
        """The elements a chrome level removes (with their subtrees)."""
        cdef unordered_set[NodePtr] out
        cdef xmlNode* node
        cdef xmlNode* title
        cdef unordered_set[NodePtr] before
        if chrome == KEEP:
            return out
        self._find_landmarks()
        for node in self.landmarks:
            out.insert(node)
        if chrome < LINKS_BEFORE_TITLE:
            return out
        self._judge_link_blocks()
        if chrome == LINKS_BEFORE_TITLE:
            title = self._title()
            if title == NULL:
                return out
            node = self.root
            while node != NULL and node != title:
                if node.type == ELEMENT_NODE:
                    before.insert(node)
                node = _next_within(node, self.root)
            node = _parent(title)
            while node != NULL:  # its ancestors open before it and hold it
                before.erase(node)
                node = _parent(node)
        for node in self.link_blocks:
            if self.regions.size() and self._inside_regions(node):
                continue
            if chrome == LINKS_BEFORE_TITLE and not before.count(node):
                continue
            out.insert(node)
        return out

    def text(self, int chrome):
        """(visible text with whitespace collapsed, whether the page marks its main content)."""
        cdef unordered_set[NodePtr] gone = self.removed(chrome)
        cdef string out
        cdef bint space = False
        cdef xmlNode* node = self.root
        cdef bint descend
        while node != NULL:
            descend = True
            if node.type == ELEMENT_NODE:
                if node != self.root and gone.count(node):
                    descend = False
                    if _has_tail(node):
                        space = True  # the tail joins the text before it with a space
                elif self.tags.is_(node, BLOCK):
                    space = True
            elif _is_text(node) and node.content != NULL:
                space = _append(out, <const unsigned char*>node.content, space)
            node = self._after(node, descend, &space)
        text = PyUnicode_DecodeUTF8(out.c_str(), out.size(), "replace")
        return text, chrome != KEEP and self.regions.size() > 0

    cdef xmlNode* _after(self, xmlNode* node, bint descend, bint* space) noexcept:
        """_next_within, marking the end of each block element left on the way as a space."""
        if descend and node.type == ELEMENT_NODE and node.children != NULL:
            return node.children
        while node != self.root:
            if descend and node.type == ELEMENT_NODE and self.tags.is_(node, BLOCK):
                space[0] = True
            if node.next != NULL:
                return node.next
            node = node.parent
            descend = True  # every element climbed out of was entered
        return NULL


cdef bint _append(string& out, const unsigned char* text, bint space) noexcept:
    """Append text to out, runs of whitespace (Py_UNICODE_ISSPACE, as str.split) as one space,
    none at the start; returns whether a space is pending."""
    cdef Py_ssize_t i = 0, width
    cdef unsigned char byte
    cdef Py_UCS4 point
    while text[i]:
        byte = text[i]
        if byte < 0x80:
            width = 1
            point = byte
        elif byte >= 0xF0 and text[i + 1] and text[i + 2] and text[i + 3]:
            width = 4
            point = ((byte & 0x07) << 18) | ((text[i + 1] & 0x3F) << 12) | (
                (text[i + 2] & 0x3F) << 6) | (text[i + 3] & 0x3F)
        elif byte >= 0xE0 and text[i + 1] and text[i + 2]:
            width = 3
            point = ((byte & 0x0F) << 12) | ((text[i + 1] & 0x3F) << 6) | (text[i + 2] & 0x3F)
        elif byte >= 0xC0 and text[i + 1]:
            width = 2
            point = ((byte & 0x1F) << 6) | (text[i + 1] & 0x3F)
        else:  # not UTF-8 (libxml2 never hands such text out): kept, decoded with "replace"
            width = 1
            point = 0xFFFD
        if Py_UNICODE_ISSPACE(point):
            space = True
        else:
            if space and out.size():
                out.push_back(b" ")
            space = False
            out.append(<const char*>text + i, width)
        i += width
    return space


def chrome_walk(cetree._Element root not None, bint roles, Py_ssize_t read_limit):
    """A walk whose .text(level) may be asked for several chrome levels of one parse."""
    return _Walk(root, roles, read_limit)
