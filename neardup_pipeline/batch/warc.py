"""WARC files -> documents, in the executors (fastwarc: a maintained, compiled WARC reader that
detects the file's compression). A page is a `response` record: its id and URL the record's
target URI, its HTML the HTTP body, its encoding the charset its HTTP header declares."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

from neardup_pipeline.batch.documents import position, problem_row, row_of
from neardup_pipeline.fingerprint import Document


def warc_rows(source: int, path: str) -> Iterator[dict[str, Any]]:
    """The rows of one WARC file's response records. A file that cannot be read, or is cut
    short, keeps the records before the damage and adds one problem row naming where."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    number, last = 0, 0
    try:
        for record in ArchiveIterator(path, record_types=WarcRecordType.response,
                                      parse_http=True):
            number += 1
            last = record.stream_pos
            where = f"{path}: record {number}"
            uri = record.headers.get("WARC-Target-URI")
            if not uri or record.headers.get("Content-Length") is None:
                yield problem_row(where, position(source, number),
                                  "response record without WARC-Target-URI or Content-Length")
                continue
            doc = Document(uri, html=bytes(record.reader.read()), url=uri,
                           encoding=record.http_charset)
            yield row_of(doc, where, position(source, number))
    except Exception as exc:  # fastwarc's own errors: a damaged file is reported, not fatal
        yield problem_row(f"{path}: after record {number}", position(source, number + 1),
                          f"WARC file unreadable from here: {exc}")
        return
    if path.endswith(".gz") and not gzip_complete(path, last):
        yield problem_row(f"{path}: after record {number}", position(source, number + 1),
                          "WARC file cut short: its last gzip member ends early")


def gzip_complete(path: str, start: int) -> bool:
    """Whether the gzip members from offset `start` (the last record's) to the end of the file
    are whole: the reader stops quietly at a cut member, which would lose its record unsaid."""
    with open(path, "rb") as file:
        file.seek(start)
        data = file.read()
    while data:
        member = zlib.decompressobj(wbits=31)
        try:
            member.decompress(data)
        except zlib.error:
            return False
        if not member.eof:
            return False
        data = member.unused_data
    return True
