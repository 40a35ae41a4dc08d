"""The mysql client programs' option syntax, on top of argparse.

Strategy: DBAs' scripts call mysqlbinlog and mariadb-binlog with the syntax
of MySQL's option parser (my_getopt): a boolean is `--x`,
`--x=1|0|ON|OFF|TRUE|FALSE`, `--skip-x`, `--disable-x` or `--enable-x`;
any option may be prefixed `--loose-` (then ignored when unknown) and
spelled with `_` for `-`; `-p` alone asks for the password, `-pSECRET` is
one. argparse already takes `--x=value` and `--x value`, unambiguous
prefixes of long options (refusing ambiguous ones by name), `-vvv` and
`--`. So `client_argv` rewrites a command line into argparse's form before
it is parsed, with the parser's own options as the dictionary: an option
gets every spelling by being declared. Each boolean gets a hidden opposite
(`add_negations`, spelled `---not-NAME`, which no prefix of a `--` option
can reach), so `--x=0` after `--x` turns it off again: the last word wins,
as in my_getopt.

Options of the peers that only tune their C client library are declared
by `add_client_library_arguments`: accepted, and documented as having no
effect here.
"""

from __future__ import annotations

import argparse

#: The hidden opposite of boolean option `--NAME` is `---not-NAME`.
NEGATION = "---not-"
#: my_getopt's words for a boolean's value (any case).
TRUE_WORDS = frozenset({"1", "on", "true"})
FALSE_WORDS = frozenset({"0", "off", "false"})
#: Prefixes that turn a boolean on or off (`--skip-x` is `--x=0`).
SWITCH_PREFIXES = (("skip-", False), ("disable-", False), ("enable-", True))
LOOSE_PREFIX = "loose-"


def is_boolean(action: argparse.Action) -> bool:
    """A flag that stores True or False (store_true, store_false, store_const of a bool)."""
    return action.nargs == 0 and isinstance(action.const, bool) and bool(action.option_strings)


def long_name(action: argparse.Action) -> str | None:
    return next((s for s in action.option_strings if s.startswith("--")), None)


def add_negations(parser: argparse.ArgumentParser) -> None:
    """Give every boolean option of `parser` its hidden opposite."""
    for action in list(parser._actions):
        name = long_name(action)
        if not is_boolean(action) or name is None or name.startswith(NEGATION):
            continue
        negation = NEGATION + name[2:]
        if negation not in parser._option_string_actions:
            parser.add_argument(negation, dest=action.dest, action="store_const",
                                const=not action.const, default=argparse.SUPPRESS,
                                help=argparse.SUPPRESS)


def add_client_library_arguments(parser: argparse.ArgumentParser) -> None:
    """The peers' options for their C client library: accepted, no effect."""
    group = parser.add_argument_group(
        "accepted for mysqlbinlog's and mariadb-binlog's command lines; no effect here "
        "(they tune those tools' C client library)")
    for names, metavar in ((("--character-sets-dir",), "DIR"), (("--plugin-dir",), "DIR"),
                           (("--default-auth",), "PLUGIN"), (("--open-files-limit",), "N"),
                           (("--binlog-row-event-max-size",), "BYTES")):
        group.add_argument(*names, metavar=metavar, dest="ignored_" + names[0][2:].replace("-", "_"),
                           help="no effect")
    debug = group.add_argument("-#", "--debug", action="store_true", dest="ignored_debug",
                               help="(=OPTIONS) no effect")
    debug.optional_value = True
    for name in ("--debug-check", "--debug-info"):
        group.add_argument(name, action="store_true", dest="ignored_" + name[2:].replace("-", "_"),
                           help="no effect")


#: my_getopt's exit statuses: an unknown option on the command line, in an option file.
EXIT_UNKNOWN_OPTION = 2
EXIT_UNKNOWN_VARIABLE = 7


class UsageError(ValueError):
    """A command line (or option file) the client programs would refuse, in
    their words, with their exit status."""

    def __init__(self, message: str, status: int = EXIT_UNKNOWN_OPTION):
        super().__init__(message)
        self.status = status


class ClientArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line, as the client programs': `PROG: reason`."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\n")


def _find(name: str, options: dict) -> tuple[argparse.Action | None, str | None]:
    """The option `--name` names: exactly, else as the only option it is a
    prefix of; an ambiguous prefix is a UsageError naming what it could be."""
    exact = options.get("--" + name)
    if exact is not None:
        return exact, "--" + name
    matches = {}
    for string, action in options.items():
        if string.startswith("--" + name):
            matches.setdefault(action, string)
    if len(matches) == 1:
        (action, string), = matches.items()
        return action, string
    if matches:
        names = ", ".join(sorted(string[2:] for string in matches.values()))
        raise UsageError(f"ambiguous option '--{name}' ({names})")
    return None, None


def _switch(action: argparse.Action, string: str, on: bool) -> str:
    """The token that sets boolean `action` on (as giving `string` does) or off."""
    if on:
        return string
    return NEGATION + long_name(action)[2:]


def _long_option(token: str, options: dict, err, leave=frozenset()) -> list[str]:
    """A `--name[=value]` token in argparse's form (none: a loose unknown
    option, or one whose destination is in `leave`)."""
    name, equals, value = token[2:].partition("=")
    name = name.replace("_", "-")
    loose = name.startswith(LOOSE_PREFIX)
    if loose:
        name = name[len(LOOSE_PREFIX):]
    action, string = _find(name, options)
    if action is None:
        for prefix, on in SWITCH_PREFIXES:
            if name.startswith(prefix):
                switched, string = _find(name[len(prefix):], options)
                if switched is not None and is_boolean(switched) and not equals:
                    return [_switch(switched, string, on)]
        if loose:
            err.write(f"Warning: binlake: unknown option '--{LOOSE_PREFIX}{name}'\n")
            return []
        raise UsageError(f"unknown option '--{name}'")
    if action.dest in leave:
        return []
    if getattr(action, "optional_value", False):
        return [string]  # the value is only for the C tool's library
    if is_boolean(action) and equals:
        word = value.lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            # mariadb-binlog's word and way: the option is left out
            err.write(f"Warning: binlake: ignoring option '--{name}' due to invalid value "
                      f"'{value}'\n")
            return []
        return [_switch(action, string, word in TRUE_WORDS)]
    return ["--" + name + equals + value]


def client_argv(argv: list[str], parser: argparse.ArgumentParser | None, err, *,
                from_file: bool = False, leave=frozenset()) -> list[str]:
    """`argv` (a subcommand's options and operands) rewritten from the mysql
    client programs' syntax into argparse's; `parser` is the subcommand's.
    `from_file`: the options of option files (`option_files.as_arguments`),
    where an unknown one is an unknown variable, and those whose destination
    is in `leave` are left to whoever reads the files for them."""
    options = {} if parser is None else {
        string: action for string, action in parser._option_string_actions.items()
        if string.startswith("--") and not string.startswith(NEGATION)}
    if from_file:
        result = []
        for token in argv:
            try:
                result.extend(_long_option(token, options, err, leave))
            except UsageError as exc:
                if not str(exc).startswith("unknown option"):
                    raise
                raise UsageError(f"unknown variable '{token[2:]}'", EXIT_UNKNOWN_VARIABLE) \
                    from None
        return result
    result = []
    for index, token in enumerate(argv):
        if token == "--":
            return result + argv[index:]
        if token == "-p":
            result.append("--ask-pass")
        elif token.startswith("-p") and not token.startswith("--"):
            result.append("--password=" + token[2:])
        elif token.startswith("-#"):
            result.append("-#")  # -#OPTIONS: the value is only for the C tool's library
        elif token.startswith("--") and not token.startswith("---") and len(token) > 2:
            result.extend(_long_option(token, options, err))
        else:
            result.append(token)
    return result
