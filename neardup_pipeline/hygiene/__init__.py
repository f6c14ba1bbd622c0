"""`neardup hygiene`: near-duplicates marked in a search index that already exists.

The stages, one module each: `fields` (a stored document -> Document, or a tagged problem),
`reader` (point in time + search_after, sliced), `workers` (slices read and fingerprinted in
child processes, merged back into one order), `known` (what earlier runs checked), `judge` (the
crawl's Deduplicator over a persistent fingerprint index), `marks` (the fields written),
`writer` (partial bulk updates, or a side index), `checkpoint` (a write-ahead record in the
cluster: a killed run resumes), `run` (the loop), `dry_report` (what a dry run would mark).
"""
