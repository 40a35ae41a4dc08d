"""Connection settings: a server address, credentials and TLS, as the mysql
client programs take them, for every connection binlake makes (the replica
client, `--schema-from`, `--snapshot-from`).

Strategy: the option files' [client] groups (`option_files`: the standard
files, or `--defaults-file`) first, then the command line; the result is the
keyword arguments of a pymysql connection, with binlake's own TLS context
and the compressed protocol's choice. `connect` makes the connection.
"""

from __future__ import annotations

import functools
import getpass
import os
from dataclasses import dataclass

from binlake.connection.option_files import CLIENT_GROUPS, OptionFileError, OptionFiles

#: Where Debian, Red Hat and the MySQL default build put the server's socket:
#: the mysql client connects there when the host is localhost (or none).
DEFAULT_SOCKETS = ("/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/tmp/mysql.sock")


#: `--password` given without a value: ask on the terminal, as mysql -p does.
ASK = object()


class SchemaSourceError(OSError):
    """The server could not be reached or read (a connection, not a usage, problem)."""


@dataclass(frozen=True)
class ServerAddress:
    """How to reach a server; None: from the option file, else the client's default."""
    host: str | None = None
    port: int | None = None
    user: str | None = None
    password: str | None = None
    socket: str | None = None
    defaults_file: str | None = None
    #: TLS as the mysql client's --ssl-ca/--ssl-cert/--ssl-key/--ssl-mode
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_mode: str | None = None
    #: The option files to read (the command line's --defaults-* options);
    #: None: `defaults_file` alone if given, else the standard ones.
    option_files: OptionFiles | None = None
    #: MariaDB's TLS options: --ssl (True) or --skip-ssl (False), --ssl-verify-server-cert,
    #: and CA directory and cipher list
    ssl: bool | None = None
    ssl_verify_server_cert: bool = False
    ssl_capath: str | None = None
    ssl_cipher: str | None = None
    #: --protocol (TCP or SOCKET), --bind-address, --server-public-key-path
    protocol: str | None = None
    bind_address: str | None = None
    server_public_key_path: str | None = None
    #: Revocation lists, TLS versions and suites, FIPS mode, a saved session
    #: (MySQL's), the server certificate's fingerprints (MariaDB 11.4's),
    #: the name sent by SNI (MySQL 8.1's)
    ssl_crl: str | None = None
    ssl_crlpath: str | None = None
    tls_version: str | None = None
    tls_ciphersuites: str | None = None
    ssl_fips_mode: str | None = None
    ssl_session_data: str | None = None
    ssl_session_data_continue_on_failed_reuse: bool = False
    ssl_fp: str | None = None
    ssl_fplist: str | None = None
    tls_sni_servername: str | None = None
    #: The compressed protocol: -C/--compress (--skip-compress: False), MySQL's
    #: --compression-algorithms and --zstd-compression-level (connection/compression.py)
    compress: bool | None = None
    compression_algorithms: str | None = None
    zstd_compression_level: int | None = None

#: --ssl-mode values (MySQL's client; MariaDB's --ssl/--ssl-verify-server-cert map onto them)
SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")


def connection_settings(address: ServerAddress) -> dict:
    """pymysql.connect keywords: option file first, then the given values."""
    files = address.option_files
    if files is None or address.defaults_file is not None:
        files = OptionFiles(defaults_file=address.defaults_file)
    settings = _option_file(files)
    for key in ("host", "user", "password", "socket"):
        value = getattr(address, key)
        if value is not None:
            settings[key] = value
    if address.port is not None:
        settings["port"] = address.port
    password = settings.get("password")
    if password is ASK:
        password = getpass.getpass("Enter password: ")
    keywords = {"user": settings.get("user") or getpass.getuser(), "password": password or "",
                "charset": "utf8mb4", "connect_timeout": 10}
    host = settings.get("host")
    socket = settings.get("socket")
    protocol = (address.protocol or settings.get("protocol") or "").upper() or None
    if protocol not in (None, "TCP", "SOCKET"):
        raise ValueError(f"--protocol {protocol}: TCP or SOCKET (PIPE and MEMORY are Windows')")
    local = host in (None, "localhost")
    if socket is None and local and protocol != "TCP" \
            and ("port" not in settings or protocol == "SOCKET"):
        socket = next((path for path in DEFAULT_SOCKETS if os.path.exists(path)), None)
    if protocol == "SOCKET" and socket is None:
        raise ValueError("--protocol SOCKET: no socket (give -S/--socket)")
    if socket is not None and protocol != "TCP" and (local or protocol == "SOCKET"):
        keywords["unix_socket"] = socket
    else:
        keywords["host"] = "127.0.0.1" if local else host
        keywords["port"] = int(settings.get("port") or 3306)
    bind_address = address.bind_address or settings.get("bind-address")
    if bind_address:
        keywords["bind_address"] = bind_address
    key_path = address.server_public_key_path or settings.get("server-public-key-path")
    if key_path:
        try:
            keywords["server_public_key"] = open(os.path.expanduser(key_path), "rb").read()
        except OSError as exc:
            raise SchemaSourceError(f"--server-public-key-path {key_path}: "
                                    f"{exc.strerror or exc}") from None
    keywords.update(_tls(address, settings))
    compression = _compression(address, settings)
    if compression is not None:
        keywords["_binlake_compression"] = compression
    return keywords


def _compression(address: ServerAddress, settings: dict):
    """The wire_compression.Compression of -C, --compression-algorithms and
    --zstd-compression-level (the command line's, else the option files'),
    or None: uncompressed."""
    from binlake.connection.compression import Compression
    compress = address.compress if address.compress is not None else _on(settings.get("compress"))
    algorithms = address.compression_algorithms
    if algorithms is None:
        algorithms = settings.get("compression-algorithms")
    level = address.zstd_compression_level
    if level is None and settings.get("zstd-compression-level") is not None:
        text = settings["zstd-compression-level"]
        try:
            level = int(text)
        except ValueError:
            raise ValueError(f"--zstd-compression-level {text}: expected 1 to 22") from None
    compression = Compression.from_options(bool(compress), algorithms, level)
    if compression is not None and "zstd" in compression.algorithms:
        import importlib.util
        if importlib.util.find_spec("zstandard") is None:
            raise SchemaSourceError("--compression-algorithms zstd needs zstandard: "
                                    "pip install 'binlake[zstd]'")
    return compression


def _ssl_mode(address: ServerAddress, settings: dict) -> str | None:
    """MySQL's --ssl-mode, else what MariaDB's TLS switches mean in its terms:
    --ssl-verify-server-cert VERIFY_IDENTITY, --ssl REQUIRED, --skip-ssl
    DISABLED (the command line first, then the option files)."""
    mode = (address.ssl_mode or settings.get("ssl-mode") or "").upper() or None
    if mode is not None:
        if mode not in SSL_MODES:
            raise ValueError(f"--ssl-mode {mode}: expected one of {', '.join(SSL_MODES)}")
        return mode
    if address.ssl_verify_server_cert or _on(settings.get("ssl-verify-server-cert")):
        return "VERIFY_IDENTITY"
    ssl = address.ssl if address.ssl is not None else _on(settings.get("ssl"))
    return None if ssl is None else "REQUIRED" if ssl else "DISABLED"


def _on(value) -> bool | None:
    """An option file's boolean: present without a value is on."""
    if value is None:
        return None
    return value is True or str(value).lower() in ("", "1", "on", "true")


def _tls(address: ServerAddress, settings: dict) -> dict:
    """pymysql's TLS keywords for the client's --ssl-* and --tls-* options.
    Without any, pymysql uses TLS when the server offers it (PREFERRED, the
    client's default); otherwise binlake builds the SSLContext itself (pymysql's
    dict knows neither revocation lists nor TLS versions), REQUIRED and
    stricter make it refuse a server without TLS, and `require_tls` checks
    that, and the certificate's fingerprint, again after connecting."""
    mode = _ssl_mode(address, settings)
    if mode == "DISABLED":
        return {"ssl_disabled": True}
    options = tls_options(address, settings)
    if mode in (None, "PREFERRED") and not options:
        return {}
    fingerprints = _fingerprints(options)
    if fingerprints and mode in (None, "PREFERRED"):
        mode = "REQUIRED"  # MariaDB: a fingerprint implies --ssl
    mode = mode or "PREFERRED"
    return {"ssl": tls_context(mode, options), "_binlake_tls": TlsRequirement(mode, fingerprints)}


#: The TLS options a connection takes, by their option names.
TLS_KEYS = ("ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-cipher", "ssl-crl", "ssl-crlpath",
            "tls-version", "tls-ciphersuites", "ssl-fips-mode", "ssl-session-data",
            "ssl-session-data-continue-on-failed-reuse", "ssl-fp", "ssl-fplist",
            "tls-sni-servername")
#: --ssl-mode values that check the server's certificate
VERIFYING_MODES = ("VERIFY_CA", "VERIFY_IDENTITY")


def tls_options(address: ServerAddress, settings: dict) -> dict:
    """The TLS options given: the command line's, else the option files'."""
    options = {}
    for key in TLS_KEYS:
        value = getattr(address, key.replace("-", "_"))
        if value in (None, False):
            value = settings.get(key)
            if key == "ssl-session-data-continue-on-failed-reuse":
                value = _on(value)
        if value not in (None, False):
            options[key] = value
    return options


#: --tls-version's names (MySQL's; MariaDB also writes TLSv1.0)
TLS_VERSIONS = {"TLSV1": "TLSv1", "TLSV1.0": "TLSv1", "TLSV1.1": "TLSv1_1", "TLSV1.2": "TLSv1_2",
                "TLSV1.3": "TLSv1_3"}


@functools.cache
def preferred_tls_context():
    """The context every connection shares that uses TLS only if the
    server offers it and was given no TLS option: it verifies nothing, as
    PyMySQL's own would not, and loads no CA store (compression.connect)."""
    return tls_context("PREFERRED", {})


def tls_context(mode: str, options: dict):
    """An ssl.SSLContext as the C clients set theirs up for these options."""
    import ssl
    sni = options.get("tls-sni-servername")
    context = (_sni_context_class() if sni else ssl.SSLContext)(ssl.PROTOCOL_TLS_CLIENT)
    context.sni_name = sni
    context.check_hostname = mode == "VERIFY_IDENTITY"
    context.verify_mode = ssl.CERT_REQUIRED if mode in VERIFYING_MODES else ssl.CERT_NONE
    # MySQL's self-made certificates fail Python 3.13's strict X.509 checks
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    ca, capath = options.get("ssl-ca"), options.get("ssl-capath")
    if ca or capath:
        _loading("--ssl-ca" if ca else "--ssl-capath", ca or capath,
                 lambda: context.load_verify_locations(cafile=ca, capath=capath))
    elif mode in VERIFYING_MODES:
        context.load_default_certs()
    crl, crlpath = options.get("ssl-crl"), options.get("ssl-crlpath")
    if crl or crlpath:
        _loading("--ssl-crl" if crl else "--ssl-crlpath", crl or crlpath,
                 lambda: context.load_verify_locations(cafile=crl, capath=crlpath))
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_CHAIN
    if options.get("ssl-cert"):
        _loading("--ssl-cert", options["ssl-cert"],
                 lambda: context.load_cert_chain(options["ssl-cert"], options.get("ssl-key")))
    if options.get("ssl-cipher"):
        _loading("--ssl-cipher", options["ssl-cipher"],
                 lambda: context.set_ciphers(options["ssl-cipher"]))
    if "tls-version" in options:
        versions = [TLS_VERSIONS.get(name.strip().upper())
                    for name in str(options["tls-version"]).split(",") if name.strip()]
        if not versions or None in versions:
            raise ValueError(f"--tls-version {options['tls-version']}: expected a list of "
                             "TLSv1.2, TLSv1.3 (and the older TLSv1, TLSv1.1)")
        chosen = sorted(getattr(ssl.TLSVersion, name) for name in versions)
        context.minimum_version, context.maximum_version = chosen[0], chosen[-1]
    if options.get("tls-ciphersuites") == "" and context.maximum_version in (
            ssl.TLSVersion.MAXIMUM_SUPPORTED, ssl.TLSVersion.TLSv1_3):
        # no TLS 1.3 suite allowed: TLS 1.3 cannot be agreed (Python sets no other list)
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    _fips_mode(options.get("ssl-fips-mode"))
    session = options.get("ssl-session-data")
    if session:
        _loading("--ssl-session-data", session, lambda: open(session, "rb").close())
        if not options.get("ssl-session-data-continue-on-failed-reuse"):
            # as the C client when the saved session is not taken up
            raise SchemaSourceError(f"--ssl-session-data {session}: a saved TLS session cannot "
                                    "be reused here; add --ssl-session-data-continue-on-failed-"
                                    "reuse to connect with a new one")
    return context


def _loading(option: str, value: str, load) -> None:
    """Run `load`; a file that cannot be read or a list that cannot be used
    is a SchemaSourceError naming the option and value."""
    import ssl
    try:
        load()
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
        raise SchemaSourceError(f"{option} {value}: {reason}") from None


#: Where Linux says whether the system's crypto runs in FIPS mode.
FIPS_SWITCH = "/proc/sys/crypto/fips_enabled"


def _fips_mode(mode: str | None) -> None:
    """--ssl-fips-mode: OFF, or ON/STRICT where the system's OpenSSL runs in FIPS mode."""
    mode = (mode or "OFF").upper()
    if mode not in ("OFF", "ON", "STRICT"):
        raise ValueError(f"--ssl-fips-mode {mode}: expected OFF, ON or STRICT")
    if mode != "OFF":
        try:
            enabled = open(FIPS_SWITCH).read().strip() == "1"
        except OSError:
            enabled = False
        if not enabled:
            raise SchemaSourceError(f"--ssl-fips-mode {mode}: this system's OpenSSL is not in "
                                    "FIPS mode")


def _sni_context_class():
    import ssl

    class SniContext(ssl.SSLContext):
        """Sends --tls-sni-servername, not the host connected to, as the server name."""
        def wrap_socket(self, sock, *args, server_hostname=None, **kwargs):
            return super().wrap_socket(sock, *args, server_hostname=self.sni_name, **kwargs)
    return SniContext


#: A fingerprint's hash by its hex length (MariaDB's --ssl-fp takes any of them)
FINGERPRINT_HASHES = {40: "sha1", 56: "sha224", 64: "sha256", 96: "sha384", 128: "sha512"}


def _fingerprints(options: dict) -> tuple:
    """(hash name, digest) of --ssl-fp and of each line of --ssl-fplist."""
    texts = []
    if options.get("ssl-fp"):
        texts.append(("--ssl-fp", options["ssl-fp"]))
    if options.get("ssl-fplist"):
        path = options["ssl-fplist"]
        lines = []
        _loading("--ssl-fplist", path, lambda: lines.extend(open(path).read().splitlines()))
        texts += [("--ssl-fplist", line) for line in lines
                  if line.strip() and not line.lstrip().startswith("#")]
    result = []
    for option, text in texts:
        name, _, digits = text.strip().rpartition(":") if text.count(":") == 1 else ("", "", text)
        digits = digits.replace(":", "").strip()
        name = name.lower() or FINGERPRINT_HASHES.get(len(digits), "")
        try:
            digest = bytes.fromhex(digits)
        except ValueError:
            digest = b""
        if name not in FINGERPRINT_HASHES.values() or not digest:
            raise ValueError(f"{option} {text.strip()}: expected a certificate's SHA-1 or SHA-2 "
                             "fingerprint in hex")
        result.append((name, digest))
    return tuple(result)


@dataclass(frozen=True)
class TlsRequirement:
    """What `require_tls` checks once connected."""
    mode: str
    fingerprints: tuple = ()


def require_tls(connection, requirement: TlsRequirement | None) -> None:
    """--ssl-mode REQUIRED and stricter: refuse a connection the server did
    not encrypt; --ssl-fp/--ssl-fplist: one whose certificate is not named."""
    import hashlib
    import ssl
    if requirement is None:
        return
    sock = getattr(connection, "_sock", None)
    encrypted = isinstance(sock, ssl.SSLSocket)
    if requirement.mode in ("REQUIRED",) + VERIFYING_MODES and not encrypted:
        raise SchemaSourceError(f"--ssl-mode {requirement.mode}: the server did not offer TLS")
    if requirement.fingerprints:
        certificate = sock.getpeercert(binary_form=True) or b""
        if not any(hashlib.new(name, certificate).digest() == digest
                   for name, digest in requirement.fingerprints):
            shown = hashlib.sha256(certificate).hexdigest().upper()
            raise SchemaSourceError("the server's certificate matches no --ssl-fp/--ssl-fplist "
                                    f"fingerprint (its SHA-256 is {shown})")


#: What a connection takes from the option files' [client] groups.
#: The switches among them (on when a file names them without a value;
#: --skip-, --disable-, --enable- as on the command line).
SWITCH_KEYS = ("ssl", "ssl-verify-server-cert", "ssl-session-data-continue-on-failed-reuse",
               "compress")
CONNECTION_KEYS = ("host", "port", "user", "password", "socket", "ssl-mode", "ssl",
                   "ssl-verify-server-cert", "protocol", "bind-address",
                   "server-public-key-path", "compress", "compression-algorithms",
                   "zstd-compression-level") + TLS_KEYS


def _option_file(files: OptionFiles) -> dict:
    """host, port, user, password, socket, TLS and compression from the option
    files' client groups."""
    try:
        options = files.options(CLIENT_GROUPS + files.program_groups)
    except OptionFileError as exc:
        raise SchemaSourceError(str(exc)) from None
    settings = {}
    for name, value in options:
        name = name.replace("_", "-")
        for prefix, word in (("skip-", "0"), ("disable-", "0"), ("enable-", "1")):
            if name.startswith(prefix) and name[len(prefix):] in SWITCH_KEYS:
                name, value = name[len(prefix):], word  # as my_getopt: the last word wins
        if name in SWITCH_KEYS:
            settings[name] = "" if value is None else value  # given alone: on
        elif name in CONNECTION_KEYS and value is not None:
            settings[name] = value
    return settings


def quote_identifier(name: str) -> str:
    """A MySQL identifier in backquotes, whatever it holds."""
    return "`" + name.replace("`", "``") + "`"


def connect(address: ServerAddress, purpose: str = "--schema-from"):
    """A pymysql connection as the mysql client would make it (SchemaSourceError if not)."""
    try:
        import pymysql
    except ImportError:
        raise SchemaSourceError(f"{purpose} needs pymysql: pip install 'binlake[server]'") from None
    from binlake.connection.compression import connect as wire_connect
    settings = connection_settings(address)
    requirement = settings.pop("_binlake_tls", None)
    compression = settings.pop("_binlake_compression", None)
    try:
        connection = wire_connect(settings, compression, preferred_tls_context())
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"cannot connect to {server_name(settings)}: {error_message(exc)}") from None
    try:
        require_tls(connection, requirement)
    except SchemaSourceError:
        connection.close()
        raise
    return connection


def server_name(settings: dict) -> str:
    return settings.get("unix_socket") or f"{settings['host']}:{settings['port']}"


def error_message(exc: Exception) -> str:
    """A pymysql error's message, without its code."""
    args = getattr(exc, "args", ())
    return str(args[1]) if len(args) >= 2 else str(exc)
