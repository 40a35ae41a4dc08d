"""Connecting to a server as the mysql client programs do.

`option_files` reads their option files, `settings` turns options into a
server address with TLS and credentials, `compression` is the compressed
client/server protocol. Used by the replica client (`binlake.live`) and by
the schema seeds read from a live server.
"""
