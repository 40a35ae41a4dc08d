"""Option files, read as the mysql client programs read them.

Strategy: the search of MariaDB's client library (my_default): the standard
files in their order (/etc/my.cnf, /etc/mysql/my.cnf, $MARIADB_HOME/my.cnf
or else $MYSQL_HOME/my.cnf, the --defaults-extra-file, ~/.my.cnf), or only
the --defaults-file, or none with --no-defaults. Each file is read line by
line with its `!include` and `!includedir` directives followed where they
stand; the options of the wanted groups (each also with the
--defaults-group-suffix) are kept in the order they come, whatever their
group, so a later line wins, and the command line after all of them. A
missing file is skipped; a named one that is missing is an error.

MySQL's login-path file (`~/.mylogin.cnf`, made by mysql_config_editor)
is read after all of them, even with --no-defaults or --defaults-file, as
MySQL's clients read it: its [client] groups and the --login-path group
(`client` by default); --no-login-paths leaves it out. Its lines are
AES-128-ECB encrypted under a key stored in the file itself (obfuscation,
not secrecy; a file others may read is ignored), decrypted with `cryptography` (pymysql's `rsa` extra).

The same reader serves the command line (`binlake dump`, `sql`: the groups
of mysqlbinlog and mariadb-binlog) and the connections of -R,
--schema-from and --snapshot-from (the [client] groups).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: The groups every MariaDB/MySQL client program reads.
CLIENT_GROUPS = ("client", "client-server", "client-mariadb")
#: The groups mysqlbinlog and mariadb-binlog read besides.
BINLOG_TOOL_GROUPS = ("mysqlbinlog", "mariadb-binlog")
#: The system-wide option files, read first, in this order.
SYSTEM_FILES = ("/etc/my.cnf", "/etc/mysql/my.cnf")
#: Directives nested deeper than this are refused (a file including itself).
MAX_INCLUDE_DEPTH = 10
#: The escapes my_default understands in values.
ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "r": "\r", "\\": "\\", "s": " ", "\"": "\"",
           "'": "'"}
#: The options that choose the files; on a command line, only as its first options.
DEFAULTS_OPTIONS = ("--no-defaults", "--defaults-file", "--defaults-extra-file",
                    "--defaults-group-suffix", "--print-defaults", "--login-path",
                    "--no-login-paths")
#: MySQL's login-path file; $MYSQL_TEST_LOGIN_FILE names another.
LOGIN_FILE = "~/.mylogin.cnf"
#: The login-path file's layout: 4 unused bytes, the key, then each line as
#: a 4-byte little-endian length and that many bytes of AES-128-ECB cipher.
LOGIN_FILE_UNUSED_BYTES = 4
LOGIN_KEY_LENGTH = 20
AES_KEY_BYTES = 16
#: The group a login-path file is read for without --login-path.
DEFAULT_LOGIN_PATH = "client"


class OptionFileError(OSError):
    """A named option file that cannot be read, or a line that cannot be."""


@dataclass(frozen=True)
class OptionFiles:
    """Which option files to read (the --defaults-* options)."""
    no_defaults: bool = False
    defaults_file: str | None = None
    extra_file: str | None = None
    group_suffix: str | None = None
    login_path: str | None = None
    no_login_paths: bool = False
    #: The program's own groups, read with the client groups (mysqlbinlog's
    #: for dump and sql): connections take their options from them too.
    program_groups: tuple = ()

    def paths(self) -> list[tuple[Path, bool]]:
        """(file, whether it must exist) in reading order."""
        if self.no_defaults:
            return []
        if self.defaults_file is not None:
            return [(Path(self.defaults_file).expanduser(), True)]
        home = os.environ.get("MARIADB_HOME") or os.environ.get("MYSQL_HOME")
        paths = [(Path(path), False) for path in SYSTEM_FILES]
        if home:
            paths.append((Path(home) / "my.cnf", False))
        if self.extra_file is not None:
            paths.append((Path(self.extra_file).expanduser(), True))
        paths.append((Path("~/.my.cnf").expanduser(), False))
        return paths

    def groups(self, groups: tuple[str, ...]) -> set[str]:
        suffix = self.group_suffix or os.environ.get("MYSQL_GROUP_SUFFIX")
        wanted = set(groups)
        if suffix:
            wanted |= {group + suffix for group in groups}
        return wanted

    def options(self, groups: tuple[str, ...]) -> list[tuple[str, str | None]]:
        """(name, value or None) of every option of `groups`, in reading order."""
        wanted = self.groups(groups)
        found: list[tuple[str, str | None]] = []
        for path, required in self.paths():
            if not path.is_file():
                if required:
                    raise OptionFileError(f"Could not open required defaults file: {path}")
                continue
            _read(path, wanted, found, 0)
        login_file = Path(os.environ.get("MYSQL_TEST_LOGIN_FILE") or LOGIN_FILE).expanduser()
        # as MySQL's clients: a file others may read or write is not trusted
        if not self.no_login_paths and login_file.is_file() \
                and not login_file.stat().st_mode & 0o077:
            login_groups = wanted | self.groups((self.login_path or DEFAULT_LOGIN_PATH,))
            _read_text(login_file, read_login_file(login_file), login_groups, found, 0)
        return found


def read_login_file(path: Path) -> str:
    """The plain text of a login-path file (OptionFileError if it is not one)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OptionFileError(f"{path}: {exc.strerror or exc}") from None
    start = LOGIN_FILE_UNUSED_BYTES + LOGIN_KEY_LENGTH
    if len(data) < start:
        raise OptionFileError(f"{path}: too short for a login-path file")
    key = bytearray(AES_KEY_BYTES)
    for index, byte in enumerate(data[LOGIN_FILE_UNUSED_BYTES:start]):
        key[index % AES_KEY_BYTES] ^= byte  # the stored key folded to AES-128's length
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        raise OptionFileError(f"{path}: reading a login-path file needs cryptography: "
                              "pip install 'binlake[server]'") from None
    lines, at = [], start
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "little")
        cipher = data[at + 4:at + 4 + length]
        if at + 4 > len(data) or length == 0 or length % AES_KEY_BYTES or len(cipher) < length:
            raise OptionFileError(f"{path}: byte {at}: a cut or damaged login-path line")
        decryptor = Cipher(algorithms.AES(bytes(key)), modes.ECB()).decryptor()
        plain = decryptor.update(cipher) + decryptor.finalize()
        padding = plain[-1]
        if not 1 <= padding <= AES_KEY_BYTES or plain[-padding:] != bytes([padding]) * padding:
            raise OptionFileError(f"{path}: byte {at}: a login-path line that does not decrypt")
        lines.append(plain[:-padding].decode("utf-8", "surrogateescape"))
        at += 4 + length
    return "".join(lines)


def _read(path: Path, wanted: set, found: list, depth: int) -> None:
    if depth > MAX_INCLUDE_DEPTH:
        raise OptionFileError(f"{path}: !include nested more than {MAX_INCLUDE_DEPTH} deep")
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise OptionFileError(f"{path}: {exc.strerror or exc}") from None
    _read_text(path, text, wanted, found, depth)


def _read_text(path: Path, text: str, wanted: set, found: list, depth: int) -> None:
    group = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!"):
            directive, _, argument = line.partition(" ")
            target = Path(argument.strip()).expanduser()
            if directive == "!include":
                if target.is_file():
                    _read(target, wanted, found, depth + 1)
            elif directive == "!includedir":
                if target.is_dir():
                    for child in sorted(target.iterdir()):
                        if child.suffix == ".cnf" and child.is_file():
                            _read(child, wanted, found, depth + 1)
            else:
                raise OptionFileError(f"{path}:{number}: unknown directive {directive}")
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise OptionFileError(f"{path}:{number}: a group without its ']'")
            group = line[1:-1].strip().lower()
            continue
        if group not in wanted:
            continue
        name, equals, value = line.partition("=")
        # the name as written (--print-defaults shows it so); `_` is `-` to the option parser
        found.append((name.strip(), _value(value) if equals else None))


def _value(text: str) -> str:
    """A value as my_default reads it: blanks around it cut; in quotes, what
    is between them (the rest of the line ignored), else what comes before
    an end comment ` #...`; escapes applied."""
    text = text.strip()
    quote = text[:1]
    closing = text.find(quote, 1) if quote in ("'", '"') else -1
    if closing > 0:
        text = text[1:closing]
    else:
        for index, char in enumerate(text):
            if char == "#" and index and text[index - 1].isspace():
                text = text[:index].rstrip()
                break
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in ESCAPES:
            out.append(ESCAPES[text[index + 1]])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def as_arguments(options: list[tuple[str, str | None]]) -> list[str]:
    """Options as command-line words (`--name=value`, `--name`)."""
    return [f"--{name}" if value is None else f"--{name}={value}" for name, value in options]


def split_defaults_options(argv: list[str]) -> tuple[OptionFiles, bool, list[str]]:
    """The leading --no-defaults/--defaults-*/--print-defaults options of a
    command line (the client programs take them only there): which files
    to read, whether to print their options, and the rest of the line."""
    settings: dict = {}
    print_defaults = False
    index = 0
    while index < len(argv):
        name, equals, value = argv[index].partition("=")
        name = name.replace("_", "-")
        if name not in DEFAULTS_OPTIONS:
            break
        if name in ("--no-defaults", "--print-defaults", "--no-login-paths"):
            if name == "--print-defaults":
                print_defaults = True
            else:
                settings[name[2:].replace("-", "_")] = True
            index += 1
            continue
        if not equals:
            break  # as the client programs: these take their value after `=` only
        field = {"--defaults-file": "defaults_file", "--defaults-extra-file": "extra_file",
                 "--defaults-group-suffix": "group_suffix", "--login-path": "login_path"}[name]
        settings[field] = value
        index += 1
    return OptionFiles(**settings), print_defaults, argv[index:]
