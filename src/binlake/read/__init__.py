"""Reading binlogs: the pure-Python reference decoder and its byte sources.

Bytes come from a file (mmap), standard input or gzip (`gzipped`); `reader`
frames them into events and holds the stream state (format description, table
maps, schema version) in one place; `events/` decodes each event family;
`rows` decodes row images against a table map, through `values` (and
`mysql_json`) for each column; `scan` walks event headers fast, for splitting
and positioning. Where the native core is built it does the same job and these
modules dispatch to it (`binlake.core`); the differential tests keep the two
equal.
"""
