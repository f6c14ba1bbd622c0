"""Settings of `neardup crawl` and the example project: polite defaults, the neardup add-on,
NEARDUP_* from the environment (the docker compose file passes NEARDUP_BACKEND, NEARDUP_ACTION
and START_URL).

Every neardup setting can be set as an environment variable NEARDUP_<FLAT NAME> (for example
NEARDUP_BACKEND=http://es:9200, NEARDUP_ACTION=tag, NEARDUP_METHODS=simhash,
NEARDUP_PAGES_INDEX=neardup-pages, NEARDUP_ES_API_KEY=...); values are strings and Scrapy's
typed getters parse them ("true", "3", "a,b", JSON for NEARDUP_TAG_FIELDS).
"""

from __future__ import annotations

import os

from neardup_pipeline.config import flat_settings

BOT_NAME = "neardup-crawler"

ADDONS = {"neardup_pipeline.NearDupAddon": 0}

# Polite by default: obey robots.txt, few parallel requests per site, adapt to the server.
USER_AGENT = "neardup-crawler (near-duplicate detection demo; Scrapy)"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 8
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 0.5
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 32 * 1024 * 1024  # neardup reads at most NEARDUP_MAX_HTML_BYTES (20 MiB)
RETRY_TIMES = 2

# Breadth-first request order (the copy nearest the start page is seen first, so it becomes the
# original) comes with the add-on: scrapy/crawl_order.py.

# No listening sockets a crawler does not need.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

FEED_EXPORT_ENCODING = "utf-8"

# NEARDUP_<FIELD> from the environment, for every field neardup knows (nothing else is read).
for _name in (flat.scrapy_name for flat in flat_settings()):
    if os.environ.get(_name):
        globals()[_name] = os.environ[_name]
if os.environ.get("NEARDUP_ENABLED"):
    NEARDUP_ENABLED = os.environ["NEARDUP_ENABLED"]
del _name
