"""The command line's client-program syntax (binlake.cli.dispatch)."""
from __future__ import annotations

import io

from binlake.cli.dispatch import build_parser, main


def test_h_is_the_host_and_help_is_long():
    args = build_parser().parse_args(["dump", "-R", "-h", "db1", "-P", "3307", "-t",
                                      "--stop-never-slave-server-id", "9", "bin.000001"])
    assert (args.remote, args.host, args.port, args.to_last_log) == (True, "db1", 3307, True)
    assert args.connection_server_id == 9 and args.files == ["bin.000001"]


def test_a_spark_failure_is_one_line_naming_the_root_cause():
    from binlake.cli.commands.pipeline import failure_line
    trace = ("An error occurred while calling o95.parquet.\n"
             ": org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
             "\tat org.apache.spark.Foo(Foo.scala:1)\n"
             "Caused by: java.io.IOException: No space left on device\n"
             "\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)\n")
    assert failure_line(RuntimeError(trace)) == "java.io.IOException: No space left on device"
    task = "py4j trace\nbinlake.errors.CorruptEvent: f: offset 9: bad\nmore"
    assert failure_line(RuntimeError(task)) == "f: offset 9: bad"


def test_a_file_that_cannot_be_read_is_named_and_ends_the_run(tmp_path):
    """As mariadb-binlog: the files before it printed, then one line naming
    it, status 1, and no closing lines for it."""
    missing = str(tmp_path / "binlog.000009")
    out, err = io.StringIO(), io.StringIO()
    assert main(["dump", "--no-defaults", missing], out=out, err=err) == 1
    assert err.getvalue() == f"binlake: No such file or directory: {missing}\n"
    assert out.getvalue().endswith("DELIMITER /*!*/;\n")
