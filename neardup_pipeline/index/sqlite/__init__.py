"""The SQLite backend: the index in one file, no server (store.py), its tables and lookups."""
