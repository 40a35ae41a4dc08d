"""MySQL/MariaDB collation ids -> Python codecs.

Rule: a collation without a Python codec (or a value its codec rejects) is
not guessed at: the value stays bytes. Collation 63 is `binary`.
"""

from __future__ import annotations

BINARY_COLLATION = 63

_CHARSET_IDS: dict[str, tuple[int, ...]] = {
    "big5": (1, 84),
    "cp1252": (5, 8, 15, 31, 47, 48, 49, 94),  # MySQL's latin1 is Windows-1252
    "cp850": (4, 80),
    "koi8_r": (7, 74),
    "iso8859_2": (2, 9, 21, 27, 77),
    "euc_jp": (12, 91, 97, 98),
    "shift_jis": (13, 88),
    "cp1251": (14, 23, 50, 51, 52),
    "iso8859_8": (16, 71),
    "tis_620": (18, 69),
    "euc_kr": (19, 85),
    "iso8859_13": (20, 41, 42, 79),
    "koi8_u": (22, 75),
    "gb2312": (24, 86),
    "iso8859_7": (25, 70),
    "cp1250": (26, 34, 44, 66, 99),
    "gbk": (28, 87),
    "cp1257": (29, 58, 59),
    "iso8859_9": (30, 78),
    "utf-8": (33, 76, 83, *range(192, 216), 223, 45, 46, *range(224, 248),
              *range(255, 324)),
    "utf_16_be": (35, 90, *range(128, 152), 159, 54, 55, *range(101, 125), 134),
    "cp866": (36, 68),
    "mac_latin2": (38, 43),
    "mac_roman": (39, 53),
    "cp852": (40, 81),
    "ascii": (11, 65),
    "utf_16_le": (56, 62),
    "cp1256": (57, 67),
    "utf_32_be": (60, 61, *range(160, 184)),
    "cp932": (95, 96),
    "gb18030": (248, 249, 250),
}

CODEC_BY_COLLATION: dict[int, str] = {
    cid: codec for codec, ids in _CHARSET_IDS.items() for cid in ids
}
# MariaDB 10.10+ UCA 14.0.0 collations: id = 2048 + (charset block << 8) + n
for _n in range(256):
    CODEC_BY_COLLATION[2048 + _n] = "utf-8"            # utf8mb3_uca1400_*
    CODEC_BY_COLLATION[2304 + _n] = "utf-8"            # utf8mb4_uca1400_*
    CODEC_BY_COLLATION[2560 + _n] = "utf_16_be"        # ucs2_uca1400_*
    CODEC_BY_COLLATION[2816 + _n] = "utf_16_be"        # utf16_uca1400_*
    CODEC_BY_COLLATION[3072 + _n] = "utf_32_be"        # utf32_uca1400_*


def codec_for(collation: int | None) -> str | None:
    """The Python codec of a collation, or None for binary and unknown ones."""
    if collation is None or collation == BINARY_COLLATION:
        return None
    return CODEC_BY_COLLATION.get(collation)
