"""Fingerprints -> verdicts: the Deduplicator (deduplicator.py) and what it builds on."""
