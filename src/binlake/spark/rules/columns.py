"""The columns binlake adds to a table's rows on their way to its Delta
table: a net change's, a keyless table's MERGE source's, a history table's.

The table rules (binlake.spark.rules) make them and binlake.spark.commits
commits them: their names are written here, below both.
"""

#: The column of a net-change row that says the key's last change deleted it.
DELETED = "_binlake_deleted"
#: The columns of a net-change row that are not the table's (a partial row
#: image is completed by the table rules before: binlake.spark.rules.table_rows).
NET_COLUMNS = (DELETED,)
#: The columns of a history table (`--history`, SCD type 2) that are not the
#: table's: the commit (binlog file, position of its end, time) at which a
#: version of a row became current, and the one at which it stopped being
#: current (NULL while it is).
VALID_FROM = ("_valid_from_file", "_valid_from_pos", "_valid_from_time")
VALID_TO = ("_valid_to_file", "_valid_to_pos", "_valid_to_time")
#: ... in a history MERGE's source: a row that closes the key's open version
#: at its VALID_FROM (the first commit of the run that touched the key).
CLOSES = "_binlake_closes"
#: The column of a keyless table's MERGE source (`merge_copies`) that says
#: what to do with its row: COPIES_REMOVED, every copy the table holds goes;
#: COPY_ADDED, one copy comes.
COPY_OP, COPIES_REMOVED, COPY_ADDED = "_binlake_copy", "removed", "added"
