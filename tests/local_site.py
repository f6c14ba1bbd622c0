"""Pages served from memory on 127.0.0.1 at a free port, for real crawls in tests."""

from __future__ import annotations

import http.server
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from neardup_pipeline.scrapy.crawl import serve_local


@contextmanager
def serve_pages(pages: Mapping[str, tuple[str, bytes]], delay: float = 0.0) -> Iterator[str]:
    """Serve {path: (content type, body)}; yields the base URL. `delay` slows every answer."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = pages.get(self.path)
            if found is None:
                self.send_error(404)
                return
            if delay:
                time.sleep(delay)
            content_type, body = found
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # tests read outcomes, not access logs

    with serve_local(Handler, "test-site") as base:
        yield base
