"""The `binlake` command line.

`dispatch` parses the arguments and runs a subcommand, `client_options` gives
argparse the mysql client programs' option syntax, `commands/` holds one
module per subcommand.
"""
