"""Helpers for testing binlake against a real MariaDB server."""
