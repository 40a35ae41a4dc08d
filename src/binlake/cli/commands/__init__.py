"""One module per `binlake` subcommand: `add_arguments(parser)` and `run(args, out, err)`."""
