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
as in my_getopt. Values too are read as my_getopt reads them (integers
with K..E suffixes, `client_integer`; choices in any case or by an
unambiguous prefix, `client_choice`), and a command line it refuses is
refused in its words with its exit status (`UsageError`, raised by
`ClientArgumentParser` for argparse's own errors).

Options of the peers that only tune their C client library are declared
by `add_client_library_arguments`: accepted, and documented as having no
effect here.
"""

from __future__ import annotations

import argparse
import re

#: The hidden opposite of boolean option `--NAME` is `---not-NAME`.
NEGATION = "---not-"
#: my_getopt's words for a boolean's value (any case).
TRUE_WORDS = frozenset({"1", "on", "true"})
FALSE_WORDS = frozenset({"0", "off", "false"})
#: Prefixes that turn a boolean on or off (`--skip-x` is `--x=0`).
SWITCH_PREFIXES = (("skip-", False), ("disable-", False), ("enable-", True))
LOOSE_PREFIX = "loose-"
#: my_getopt's exit statuses (include/my_getopt.h): a value the program
#: itself refuses is 1, as any other failure.
EXIT_UNSPECIFIED_ERROR = 1
EXIT_UNKNOWN_OPTION = 2
EXIT_AMBIGUOUS_OPTION = 3
EXIT_ARGUMENT_REQUIRED = 5
EXIT_UNKNOWN_VARIABLE = 7
EXIT_UNKNOWN_SUFFIX = 9
#: An integer's suffixes (powers of 1024), as my_getopt reads them.
SUFFIXES = "KMGTPE"


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
    def ignored(name: str) -> str:
        return "ignored_" + name[2:].replace("-", "_")
    for name, metavar in (("--character-sets-dir", "DIR"), ("--plugin-dir", "DIR"),
                          ("--default-auth", "PLUGIN"), ("--open-files-limit", "N"),
                          ("--binlog-row-event-max-size", "BYTES")):
        group.add_argument(name, metavar=metavar, dest=ignored(name), help="no effect")
    debug = group.add_argument("-#", "--debug", action="store_true", dest=ignored("--debug"),
                               help="(=OPTIONS) no effect")
    debug.optional_value = True  # `--debug=OPTIONS`: the value is dropped (`_long_option`)
    for name in ("--debug-check", "--debug-info"):
        group.add_argument(name, action="store_true", dest=ignored(name), help="no effect")
    group.add_argument("--shared-memory-base-name", metavar="NAME",
                       dest=ignored("--shared-memory-base-name"),
                       help="no effect (Windows' shared-memory connections)")


class UsageError(ValueError):
    """A command line (or option file) the client programs would refuse, in
    their words, with their exit status."""

    def __init__(self, message: str, status: int = EXIT_UNKNOWN_OPTION, prog: str = "binlake"):
        super().__init__(message)
        self.status = status
        self.prog = prog  #: who says it: `binlake dump`


class ClientArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit status as my_getopt's."""

    def error(self, message):
        """Raises UsageError (`cli.main` writes it): argparse's message in my_getopt's words."""
        missing = re.match(r"argument (\S+): expected one argument$", message)
        if missing:
            option = missing.group(1).split("/")[-1]
            raise UsageError(f"option '{option}' requires an argument", EXIT_ARGUMENT_REQUIRED,
                             self.prog)
        value = re.match(r"argument \S+: ((Unknown suffix|Unknown option to) .*)", message,
                         re.S)
        if value:
            status = EXIT_UNKNOWN_SUFFIX if value.group(2) == "Unknown suffix" \
                else EXIT_UNSPECIFIED_ERROR
            raise UsageError(value.group(1), status, self.prog)
        raise UsageError(message, EXIT_UNKNOWN_OPTION, self.prog)


def client_integer(name: str):
    """An argparse type: an integer as my_getopt reads it (`1K` is 1024, up to `E`)."""
    def parse(text: str) -> int:
        digits = text.strip()
        scale = 1
        if digits and digits[-1].upper() in SUFFIXES:
            scale = 1024 ** (SUFFIXES.index(digits[-1].upper()) + 1)
            digits = digits[:-1]
        try:
            return int(digits) * scale
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Unknown suffix '{text.strip()[-1:]}' used for variable '{name}' (value "
                f"'{text}'). Legal suffix characters are: {', '.join(SUFFIXES)}") from None
    parse.__name__ = "integer"
    return parse


def client_choice(name: str, choices: tuple[str, ...]):
    """An argparse type: one of `choices` in any case, or an unambiguous prefix
    of one (my_getopt's find_type)."""
    def parse(text: str) -> str:
        word = text.lower()
        if word in choices:
            return word
        matches = [choice for choice in choices if choice.startswith(word)] if word else []
        if len(matches) == 1:
            return matches[0]
        alternatives = ",".join(f"'{c.upper()}'" for c in choices)
        raise argparse.ArgumentTypeError(
            f"Unknown option to {name}: {text} (alternatives are: {alternatives})")
    parse.__name__ = "choice"
    return parse


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
        raise UsageError(f"ambiguous option '--{name}' ({names})", EXIT_AMBIGUOUS_OPTION)
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
                    return [] if switched.dest in leave else [_switch(switched, string, on)]
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
                if exc.status != EXIT_UNKNOWN_OPTION:
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
