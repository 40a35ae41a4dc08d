//! Row images as mysqlbinlog -v / -vv text (`###` lines), byte-identical to mariadb-binlog.
