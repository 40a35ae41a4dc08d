"""MySQL/MariaDB collation ids -> Python codecs.

Strategy: the id -> character set table is the one read off a real MariaDB
server (collation_names.py); this module only says which Python codec reads
each character set, plus the ids MySQL 8 added that MariaDB does not have.

Rule: a collation without a Python codec (or a value its codec rejects) is
not guessed at: the value stays bytes. Collation 63 is `binary`.
"""

from __future__ import annotations

from binlake.collation_names import COLLATIONS

BINARY_COLLATION = 63

#: Character set -> Python codec. MySQL's latin1 is Windows-1252.
CHARSET_CODECS = {
    "latin1": "cp1252", "utf8mb3": "utf-8", "utf8": "utf-8", "utf8mb4": "utf-8",
    "ascii": "ascii", "ucs2": "utf_16_be", "utf16": "utf_16_be", "utf16le": "utf_16_le",
    "utf32": "utf_32_be", "big5": "big5", "latin2": "iso8859_2", "cp850": "cp850",
    "koi8r": "koi8_r", "koi8u": "koi8_u", "ujis": "euc_jp", "eucjpms": "euc_jp",
    "sjis": "shift_jis", "cp932": "cp932", "cp1251": "cp1251", "cp1250": "cp1250",
    "cp1256": "cp1256", "cp1257": "cp1257", "hebrew": "iso8859_8", "tis620": "tis_620",
    "euckr": "euc_kr", "latin7": "iso8859_13", "latin5": "iso8859_9", "greek": "iso8859_7",
    "gb2312": "gb2312", "gbk": "gbk", "gb18030": "gb18030", "cp866": "cp866",
    "cp852": "cp852", "macce": "mac_latin2", "macroman": "mac_roman",
}

#: Bytes of a character set's longest character (the server's mbmaxlen); 1
#: if not listed. Column lengths in characters are lengths in bytes over it.
MAX_CHARACTER_BYTES = {
    "big5": 2, "ujis": 3, "sjis": 2, "euckr": 2, "gb2312": 2, "gbk": 2, "utf8mb3": 3, "utf8": 3,
    "ucs2": 2, "utf8mb4": 4, "utf16": 4, "utf16le": 4, "utf32": 4, "cp932": 2, "eucjpms": 3,
    "gb18030": 4,
}

#: Ids MySQL 8 uses that a MariaDB server does not know.
_MYSQL_ONLY = {76: "utf8mb3", **{i: "gb18030" for i in (248, 249, 250)},
               **{i: "utf8mb4" for i in range(255, 324)}}

CODEC_BY_COLLATION: dict[int, str] = {
    cid: CHARSET_CODECS[charset]
    for cid, charset in {**_MYSQL_ONLY, **{i: cs for i, (cs, _) in COLLATIONS.items()}}.items()
    if charset in CHARSET_CODECS
}


def codec_for(collation: int | None) -> str | None:
    """The Python codec of a collation, or None for binary and unknown ones."""
    if collation is None or collation == BINARY_COLLATION:
        return None
    return CODEC_BY_COLLATION.get(collation)


_CODECS: dict | None = None


def collation_codecs() -> dict:
    """Collation id -> Python codec, as `codec_for` answers (binary ones left
    out): what the native loops are given once."""
    global _CODECS
    if _CODECS is None:
        _CODECS = {cid: codec for cid in CODEC_BY_COLLATION
                   if (codec := codec_for(cid)) is not None}
    return _CODECS


def collation_of(charset: str) -> int | None:
    """A collation id of a character set named in DDL (the lowest the server
    has: any of them reads the same), None when unknown."""
    wanted = {"utf8": "utf8mb3"}.get(charset.lower(), charset.lower())
    if wanted == "binary":
        return BINARY_COLLATION
    return min((cid for cid, (name, _) in COLLATIONS.items() if name == wanted), default=None)
