"""Storage: atomic files, the response cache, the run store and `run.json`.

SQLite in WAL mode where several processes may share a file.
"""
