"""Example Scrapy project with the neardup add-on enabled (not installed by the wheel)."""
