"""Type stub of the C++ extension built from _textwalk.pyx."""

import lxml.etree

class _Walk:
    def text(self, chrome: int) -> tuple[str, bool]: ...

def chrome_walk(root: lxml.etree._Element, roles: bool, read_limit: int) -> _Walk: ...
