"""A table as python-mysql-replication keeps it in `BinLogStreamReader.table_map`."""

from binlake.compat.pymysqlreplication.column import Fields


class Table(Fields):
    def __init__(self, table_id, schema, table, columns, primary_key=None,
                 column_name_flag=False):
        if primary_key is None:
            keys = [c.data["name"] for c in columns if c.data["is_primary"]]
            primary_key = "" if not keys else keys[0] if len(keys) == 1 else tuple(keys)
        self.__dict__.update({"table_id": table_id, "schema": schema, "table": table,
                              "columns": columns, "primary_key": primary_key,
                              "column_name_flag": column_name_flag})
