"""The compressed client/server protocol: mysqlbinlog's -C/--compress and
MySQL 8's --compression-algorithms and --zstd-compression-level.

Strategy: compression is a layer under the ordinary packets, switched on by
both peers right after the handshake's final OK when the client asked for
an algorithm the server offered. From then on every byte either side sends
travels in compressed packets (`sql-common/net_serv.cc` `net_real_write`,
`my_net_read_packet`; `mysys/my_compress.cc`)::

    3 bytes  length of the body (little-endian)
    1 byte   compressed sequence id
    3 bytes  length of the body uncompressed; 0: the body is not compressed
    body     a zlib stream (`compress2`) or one zstd frame, else the bytes as they are

The layer does not care where ordinary packets start: a compressed packet
may hold several of them, or part of one. Senders leave payloads under
MIN_COMPRESS_LENGTH (50 bytes) and payloads that do not shrink uncompressed.
The compressed sequence id restarts at 0 with each command the client sends
and follows the peer's otherwise (the C client's `compress_pkt_nr`). A peer
syncs the ordinary packets' sequence ids to the compressed one whenever it
flushes, so inside the stream they jump; the C readers do not check them.

Negotiation (`sql-common/client.cc`): zlib is CLIENT_COMPRESS, zstd is
CLIENT_ZSTD_COMPRESSION_ALGORITHM (MySQL 8.0.18+), whose level is one byte
after the connection attributes of the handshake response. The client
offers what it allows and the server offered; with both, zlib is used. When
nothing is in common the connection stays uncompressed, unless the client's
list left `uncompressed` out: then it fails with CR_COMPRESSION_WRONGLY_CONFIGURED.
MariaDB servers offer zlib only.

Here: `unwrap` and `wrap` are the framing (bytes in, bytes out); a
`CompressedChannel` keeps one socket's state (sequence id, bytes received
but not unwrapped, plain bytes not yet taken) and reads from the socket in
bulk, a whole compressed packet decompressed by one zlib or zstd call.
PyMySQL 2.2 does not compress: `connect` makes its connection through a
small subclass that offers the algorithms in the handshake, switches the
channel on right after authentication (before PyMySQL's SET NAMES), and
routes `_read_bytes`/`_write_bytes` through it. The replica
(`replica.ReplicaConnection`) reads the binlog dump from the same channel.

Rule: a compressed packet that cannot be unwrapped (a body that does not
decompress, or not to the length its header says) is a WireCompressionError
saying which and why; the callers turn it into their own one-line error.
"""

from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass

#: Capability flags (include/mysql_com.h)
CLIENT_COMPRESS = 1 << 5
CLIENT_ZSTD_COMPRESSION_ALGORITHM = 1 << 26
#: The header: NET_HEADER_SIZE (length, sequence id) + COMP_HEADER_SIZE (length uncompressed)
NET_HEADER_SIZE = 4
COMP_HEADER_SIZE = 3
HEADER_SIZE = NET_HEADER_SIZE + COMP_HEADER_SIZE
#: Payloads shorter than this travel uncompressed (mysys/my_compress.cc)
MIN_COMPRESS_LENGTH = 50
#: The most a compressed packet holds, before or after compression (3-byte lengths)
MAX_PACKET_LENGTH = 0xFFFFFF
#: mysql_default_compression_level(): zlib's is 6, zstd's 3; --zstd-compression-level's range
ZLIB_LEVEL = 6
DEFAULT_ZSTD_LEVEL = 3
ZSTD_LEVELS = range(1, 23)
#: --compression-algorithms' names (any case)
ALGORITHMS = ("zlib", "zstd", "uncompressed")
FLAGS = {"zlib": CLIENT_COMPRESS, "zstd": CLIENT_ZSTD_COMPRESSION_ALGORITHM}
#: Client error codes (include/errmsg.h)
CR_SERVER_LOST = 2013
CR_MALFORMED_PACKET = 2027
CR_COMPRESSION_WRONGLY_CONFIGURED = 2066
#: Bytes asked of the socket at a time
RECEIVE_CHUNK = 1 << 20


class WireCompressionError(ValueError):
    """A compressed packet from the peer that cannot be unwrapped."""


# -- what the client allows ---------------------------------------------------------

@dataclass(frozen=True)
class Compression:
    """The algorithms the client offers, and whether it settles for an
    uncompressed connection when the server offers none of them."""

    algorithms: tuple = ("zlib",)
    uncompressed: bool = True
    zstd_level: int = DEFAULT_ZSTD_LEVEL

    @classmethod
    def from_options(cls, compress: bool = False, algorithms: str | None = None,
                     zstd_level: int | None = None) -> "Compression | None":
        """What mysqlbinlog makes of -C, --compression-algorithms and
        --zstd-compression-level (None: no compression asked for). As
        `mysql_options` applies them: the list names the algorithms and
        whether `uncompressed` is allowed (default: only uncompressed);
        --compress adds zlib to whatever the list allows."""
        if zstd_level is None:
            zstd_level = DEFAULT_ZSTD_LEVEL
        if zstd_level not in ZSTD_LEVELS:
            raise ValueError(f"--zstd-compression-level {zstd_level}: expected 1 to 22")
        names: list = []
        uncompressed = True
        if algorithms is not None:
            words = [word.strip().lower() for word in str(algorithms).split(",")]
            if not any(words) or any(word not in ALGORITHMS for word in words):
                raise ValueError(f"--compression-algorithms {algorithms}: expected a list of "
                                 "zlib, zstd, uncompressed")
            uncompressed = "uncompressed" in words
            names = [word for word in ALGORITHMS if word in words and word != "uncompressed"]
        if compress and "zlib" not in names:
            names.insert(0, "zlib")
        if not names:
            return None
        return cls(tuple(names), uncompressed, zstd_level)

    @property
    def flags(self) -> int:
        """The capability flags that offer these algorithms."""
        return sum(FLAGS[name] for name in self.algorithms)

    def agree(self, server_capabilities: int) -> int:
        """The flags to send a server with these capabilities (0: uncompressed);
        a WireCompressionError when nothing is in common and uncompressed is
        not allowed."""
        agreed = self.flags & server_capabilities
        if not agreed and not self.uncompressed:
            raise WireCompressionError(
                f"the server offers none of {', '.join(self.algorithms)} and "
                "--compression-algorithms does not allow uncompressed")
        return agreed


def agreed_algorithm(flags: int) -> str | None:
    """The algorithm both peers use with these flags: with both, zlib."""
    if flags & CLIENT_COMPRESS:
        return "zlib"
    if flags & CLIENT_ZSTD_COMPRESSION_ALGORITHM:
        return "zstd"
    return None


# -- the framing ----------------------------------------------------------------------

def codec(algorithm: str, zstd_level: int = DEFAULT_ZSTD_LEVEL):
    """(compress(data) -> bytes, decompress(body, size) -> bytes) of an algorithm;
    decompress raises WireCompressionError on a body that is not `size` bytes
    compressed."""
    if algorithm == "zlib":
        return functools.partial(zlib.compress, level=ZLIB_LEVEL), _zlib_decompress
    if algorithm == "zstd":
        import zstandard
        compressor = zstandard.ZstdCompressor(level=zstd_level)
        decompressor = zstandard.ZstdDecompressor()

        def zstd_decompress(body, size: int) -> bytes:
            try:
                declared = zstandard.frame_content_size(body)
                if declared not in (-1, size):
                    raise WireCompressionError(f"its zstd frame holds {declared} bytes, "
                                               f"the header says {size}")
                return decompressor.decompress(body, max_output_size=size,
                                               allow_extra_data=False)
            except zstandard.ZstdError as exc:
                raise WireCompressionError(f"zstd: {exc}") from None
        return compressor.compress, zstd_decompress
    raise ValueError(f"compression algorithm {algorithm!r}: expected zlib or zstd")


def _zlib_decompress(body, size: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        # one byte more than promised: a longer stream shows, a complete one ends
        data = inflater.decompress(body, size + 1)
    except zlib.error as exc:
        raise WireCompressionError(f"zlib: {exc}") from None
    if not inflater.eof:
        raise WireCompressionError(f"its zlib stream is cut or longer than the {size} bytes "
                                   "the header says")
    if inflater.unused_data:
        raise WireCompressionError(f"{len(inflater.unused_data)} bytes follow its zlib stream")
    return data


def unwrap(buffer, decompress) -> tuple[list, int, int | None]:
    """The whole compressed packets at the start of `buffer`: (their plain
    bytes, one piece each; the bytes they took; the last one's sequence id,
    None if there was none). A packet cut short is left for later; one that
    does not unwrap stops there, and is the error when it comes first."""
    pieces, at, end, sequence = [], 0, len(buffer), None
    view = memoryview(buffer)
    header = _HEADER.unpack_from
    try:
        while end - at >= HEADER_SIZE:
            word, low, high = header(buffer, at)
            length, sequence_here = word & 0xFFFFFF, word >> 24
            stop = at + HEADER_SIZE + length
            if stop > end:
                break
            size = low | high << 16
            if size:
                try:
                    body = decompress(view[at + HEADER_SIZE:stop], size)
                    if len(body) != size:
                        raise WireCompressionError(f"{len(body)} bytes uncompressed, the "
                                                   f"header says {size}")
                except WireCompressionError as exc:
                    if pieces:
                        break     # the packets before it first; the error at the next call
                    raise WireCompressionError(f"compressed packet {sequence_here} of {length} "
                                               f"bytes: {exc}") from None
            else:
                body = bytes(view[at + HEADER_SIZE:stop])
            pieces.append(body)
            sequence = sequence_here
            at = stop
    finally:
        view.release()  # the caller resizes `buffer` next
    return pieces, at, sequence


#: length (3 bytes) | sequence id << 24, then the length uncompressed as 2 + 1 bytes
_HEADER = struct.Struct("<IHB")


def wrap(data, sequence: int, compress) -> tuple[bytes, int]:
    """`data` as compressed packets from sequence id `sequence` on:
    (their bytes, the next sequence id)."""
    out = bytearray()
    view = memoryview(data)
    for start in range(0, max(len(view), 1), MAX_PACKET_LENGTH):
        part = view[start:start + MAX_PACKET_LENGTH]
        body, size = part, 0
        if len(part) >= MIN_COMPRESS_LENGTH:
            packed = compress(part)
            if len(packed) < len(part):
                body, size = packed, len(part)
        out += (len(body).to_bytes(3, "little") + bytes([sequence])
                + size.to_bytes(3, "little"))
        out += body
        sequence = (sequence + 1) & 0xFF
    return bytes(out), sequence


# -- one connection's channel ----------------------------------------------------------

class CompressedChannel:
    """Both directions of one compressed connection on `sock`.

    `receive` gives the plain bytes of whole compressed packets (reading the
    socket only when none is here yet); `read`/`peek` give exact counts, as
    PyMySQL asks; `pack` wraps what is to be sent."""

    def __init__(self, sock, algorithm: str, zstd_level: int = DEFAULT_ZSTD_LEVEL):
        self.sock = sock
        self.algorithm = algorithm
        self.sequence = 0
        self.received = 0                # bytes read from the socket (compressed)
        self._compress, self._decompress = codec(algorithm, zstd_level)
        self._new_command = False
        self._raw = bytearray()          # received, not yet unwrapped
        self._plain = bytearray()        # unwrapped, not yet taken
        self._chunk = bytearray(RECEIVE_CHUNK)

    def start_command(self) -> None:
        """The next bytes sent begin a command: its sequence id restarts at 0."""
        self._new_command = True

    def pack(self, data) -> bytes:
        if self._new_command:
            self.sequence, self._new_command = 0, False
        packets, self.sequence = wrap(data, self.sequence, self._compress)
        return packets

    def receive(self) -> bytes:
        """The plain bytes of the compressed packets here, else of at least
        one from the socket; b"" when the peer closed the connection."""
        if self._plain:
            data = bytes(self._plain)
            self._plain.clear()
            return data
        return self._more()

    def read(self, n: int) -> bytes:
        """Exactly `n` plain bytes (EOFError if the peer closes first)."""
        data = self.peek(n)
        del self._plain[:n]
        return data

    def peek(self, n: int) -> bytes:
        while len(self._plain) < n:
            more = self._more()
            if not more:
                raise EOFError("the server closed the connection")
            self._plain += more
        return bytes(self._plain[:n])

    def _more(self) -> bytes:
        while True:
            if self._raw:
                pieces, taken, sequence = unwrap(self._raw, self._decompress)
                if taken:
                    del self._raw[:taken]
                    self.sequence = (sequence + 1) & 0xFF
                    data = b"".join(pieces)
                    if data:
                        return data
            got = self.sock.recv_into(self._chunk)
            if not got:
                return b""
            self.received += got
            self._raw += memoryview(self._chunk)[:got]


# -- PyMySQL ----------------------------------------------------------------------------

def connect(settings: dict, compression: Compression | None, preferred_tls=None):
    """A PyMySQL connection made with `settings` (pymysql.connect keywords),
    compressed as `compression` allows (None: PyMySQL's own). `preferred_tls`:
    the SSLContext to use when no TLS option is given (TLS only if the server
    offers it), instead of the one PyMySQL would make (`connection_class`)."""
    if compression is None:
        return connection_class()(preferred_tls=preferred_tls, **settings)
    return compressing_connection_class()(compression=compression,
                                          preferred_tls=preferred_tls, **settings)


@functools.cache
def connection_class():
    """PyMySQL's Connection, taking the TLS context of connections that use
    TLS only if the server offers it from its caller (made on first use:
    pymysql is optional). PyMySQL makes that context anew for each
    connection and loads the system's CA store into it (35 ms, a live
    stream's connections several times over), though it verifies nothing
    with it; binlake shares one without the store
    (`settings.preferred_tls_context`)."""
    from pymysql.connections import Connection

    class SharedTlsConnection(Connection):
        def __init__(self, *, preferred_tls=None, **kwargs):
            self._preferred_tls = preferred_tls
            super().__init__(**kwargs)

        def _create_ssl_ctx(self, sslp):
            if isinstance(sslp, dict) and not sslp and self._preferred_tls is not None:
                return self._preferred_tls  # PREFERRED, no TLS option given
            return super()._create_ssl_ctx(sslp)

    return SharedTlsConnection


@functools.cache
def compressing_connection_class():
    """The Connection of `connection_class`, compressing."""
    from pymysql import err
    from pymysql.connections import MysqlPacket

    class CompressingConnection(connection_class()):
        """A pymysql Connection that offers `compression` in the handshake
        and, when the server agrees, speaks through a CompressedChannel."""

        def __init__(self, *, compression: Compression, **kwargs):
            self.compression = compression
            self.channel: CompressedChannel | None = None
            self._level_byte = None
            super().__init__(**kwargs)

        def connect(self, sock=None):
            self.channel, self._level_byte = None, None
            return super().connect(sock)

        def _request_authentication(self):
            try:
                agreed = self.compression.agree(self.server_capabilities)
            except WireCompressionError as exc:
                raise err.OperationalError(
                    CR_COMPRESSION_WRONGLY_CONFIGURED,
                    f"Connection failed due to wrongly configured compression algorithm: {exc}"
                ) from None
            everything = CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM
            self.client_flag = (self.client_flag & ~everything) | agreed
            if agreed & CLIENT_ZSTD_COMPRESSION_ALGORITHM:
                self._level_byte = bytes([self.compression.zstd_level])
            super()._request_authentication()
            self._level_byte = None
            algorithm = agreed_algorithm(agreed)
            if algorithm is not None:
                # the server switched after its OK and sends nothing unasked
                self.channel = CompressedChannel(self._sock, algorithm,
                                                 self.compression.zstd_level)

        def write_packet(self, payload):
            # The handshake response (not the 32-byte TLS request before it)
            # ends with zstd's level.
            if self._level_byte is not None and len(payload) > 32:
                payload, self._level_byte = payload + self._level_byte, None
            super().write_packet(payload)

        def _execute_command(self, command, sql):
            if self.channel is not None:
                self.channel.start_command()
            return super()._execute_command(command, sql)

        def close(self):
            if self.channel is not None:
                self.channel.start_command()  # COM_QUIT
            super().close()

        def _write_bytes(self, data):
            if self.channel is not None:
                data = self.channel.pack(data)
            super()._write_bytes(data)

        def _read_bytes(self, num_bytes):
            if self.channel is None:
                return super()._read_bytes(num_bytes)
            return self._from_channel(self.channel.read, num_bytes)

        def _read_packet(self, packet_type=MysqlPacket):
            if self.channel is not None:
                if self._current_timeout != self._read_timeout:
                    self._sock.settimeout(self._read_timeout)
                    self._current_timeout = self._read_timeout
                # the peer numbers its packets from the compressed sequence id
                # after each flush: take the number the next one carries
                self._next_seq_id = self._from_channel(self.channel.peek, 4)[3]
            return super()._read_packet(packet_type)

        def _from_channel(self, read, n: int) -> bytes:
            try:
                return read(n)
            except WireCompressionError as exc:
                self._force_close()
                raise err.OperationalError(
                    CR_MALFORMED_PACKET, f"a corrupt compressed packet from the server: {exc}"
                ) from None
            except EOFError:
                self._force_close()
                raise err.OperationalError(
                    CR_SERVER_LOST, "Lost connection to MySQL server during query") from None
            except OSError as exc:
                self._force_close()
                raise err.OperationalError(
                    CR_SERVER_LOST, f"Lost connection to MySQL server during query ({exc})"
                ) from None

    return CompressingConnection
