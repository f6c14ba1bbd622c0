"""The bundled Scrapy project: a generic same-host spider with the neardup add-on enabled."""

from __future__ import annotations

from pathlib import Path

DEMO_SITE: Path = Path(__file__).resolve().parent / "demo_site"
