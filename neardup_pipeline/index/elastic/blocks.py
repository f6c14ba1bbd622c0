"""Index blocks: Elasticsearch answering but holding writes back (a write block, the
flood-stage read-only block), and how an operator lifts each.

Not an outage a retry rides out: the block stays until someone lifts it or frees disk. To the
crawl it is one all the same (pages pass unchecked, writes spooled and replayed later); to a
command, an error that names the call that lifts it."""

from __future__ import annotations

import re

from neardup_pipeline.errors import IndexUnavailable

# How to lift each index block Elasticsearch puts on writes, by the block's setting.
BLOCK_FIXES = {
    "index.blocks.write": (
        "lift the block with PUT {index}/_settings {{\"index.blocks.write\": null}}"),
    "index.blocks.read_only": (
        "lift the block with PUT {index}/_settings {{\"index.blocks.read_only\": null}}"),
    "index.blocks.read_only_allow_delete": (
        "free disk space on the node (Elasticsearch lifts the block itself once its disk use is "
        "below the high watermark), or lift it with PUT {index}/_settings "
        "{{\"index.blocks.read_only_allow_delete\": null}}"),
}


_BLOCKED_INDEX = re.compile(r"index \[([^\]]+)\] blocked by")


class WritesRefused(IndexUnavailable):
    """Elasticsearch answers but holds the writes back: an index block (a write block, the
    flood-stage read-only block) or 429 past the bounded retries. The writes stay queued;
    to the crawl it is an outage (pages pass unchecked, writes spooled, replayed later)."""

    held_back = True  # the server answers: degraded mode says so, not "unavailable"


def block_fix(reason: str, indices: str | None = None) -> str | None:
    """How to lift the index block a refusal's reason text names (None: no block we know);
    the indices named in the reason unless given."""
    if indices is None:
        indices = ",".join(dict.fromkeys(_BLOCKED_INDEX.findall(reason))) or "<index>"
    if "read-only-allow-delete" in reason or "flood-stage" in reason:
        setting = "index.blocks.read_only_allow_delete"
    elif "index write (api)" in reason:
        setting = "index.blocks.write"
    elif "index read-only (api)" in reason:
        setting = "index.blocks.read_only"
    else:
        return None
    return BLOCK_FIXES[setting].format(index=indices)
