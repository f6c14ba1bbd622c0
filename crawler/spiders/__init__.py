"""Spiders of the bundled crawler project."""
