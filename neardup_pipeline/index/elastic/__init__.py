"""The Elasticsearch backend: the fingerprint index (store.py), its DF side index, the pages
index, collapsed search and the mappings."""
