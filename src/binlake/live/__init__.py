"""The replica client: a live server's binlogs, received as a replica receives them.

`protocol` speaks the replication protocol (register, dump, heartbeats),
`source` makes a live server one more byte source for the reader (with
resume tokens and reconnects), `backup` keeps byte-exact copies of its
binlogs (`dump -R --raw`).
"""
