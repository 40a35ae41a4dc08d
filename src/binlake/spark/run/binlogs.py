"""Which bytes of which binlogs a run reads, and the refusals that keep a
binlog's changes going in in order.

Strategy: the manifest records, per file, how far it has been read (always
a transaction boundary found by the header scan) and a fingerprint of its
format description (`fingerprint`). `new_segments` scans each input from
there and gives the byte ranges not read yet; `catch_up` gives the ranges
read before to read again for tables `--tables` newly selects (refused,
naming --snapshot-tables, where the follower removed those copies:
binlake.spark.state.copies). Both refuse in one line, before anything is written, what would make the lake silently
wrong: a binlog older than those read or after one never read (by number,
and by the name the previous file's ROTATE gives), a file that is not the
one read before under its name. A run may be held to a length per file
(`limits`: the follower's copies as far as they are fsynced), so that the
manifest never records bytes a crash of the machine can take back.
`unread_bytes` is the size of a run
before its session starts, from the manifest alone.
"""

from __future__ import annotations

import os
import zlib

from binlake.live.backup import numbered
from binlake.read.scan import read_framing, scan
from binlake.spark.read.batches import TableFilter
from binlake.spark.read.ranges import (
    FAILOVER_FILES,
    FIRST_EVENT,
    Split,
    expand_inputs,
    number_files,
)
from binlake.spark.state.manifest import FileRead, Manifest
from binlake.spark.state.store import load_manifest


def unread_bytes(inputs, out: str) -> int | None:
    """About how many bytes of `inputs` a run over `out` has yet to read (from
    the manifest, no scan): the size of a run, before its session starts."""
    try:
        manifest = load_manifest(os.path.abspath(out))
        return sum(max(0, os.path.getsize(path) - _read_before(manifest, path, seq))
                   for path, seq in number_files(expand_inputs(inputs)))
    except (OSError, ValueError):
        return None  # the run itself says what is wrong


def _read_before(manifest: Manifest, path: str, seq: int) -> int:
    """The bytes of `path` the lake has read, or will never read (before a
    snapshot's or a failover's floor)."""
    known = manifest.files.get(os.path.basename(path))
    if known is not None:
        return known.end
    floor = manifest.floor_of(seq)
    if floor is None or seq > floor.file_seq:
        return 0
    return floor.pos if seq == floor.file_seq else os.path.getsize(path)


def fingerprint(path: str) -> str:
    """CRC32 of the format description without its flags (the server clears
    LOG_EVENT_BINLOG_IN_USE_F when it closes the file) and checksum."""
    with open(path, "rb") as f:
        head = f.read(4096)
    framing = read_framing(head, len(head))
    end = framing.fde_end if framing else min(len(head), 4 + 19)
    stable = head[4:4 + 17] + head[4 + 19:end - (framing.checksum_len if framing else 0)]
    return f"{zlib.crc32(stable):08x}"


def new_segments(files, manifest: Manifest, warnings: list, limits: dict | None = None):
    """The byte ranges not read yet: from where the manifest left each file
    to its last transaction boundary (before its bytes in `limits`, {name:
    bytes}, where given: what of a copy still being written is on disk for
    sure; a file whose format description is not is left to a later run)."""
    segments, scans, entries = [], {}, {}
    _refuse_holes(files, manifest)
    for path, seq in files:
        name = os.path.basename(path)
        mark = fingerprint(path)
        known = manifest.files.get(name)
        floor = manifest.floor_of(seq)
        if known is None and seq >= FAILOVER_FILES and floor is None:
            raise ValueError(f"{path}: a copy of a server the follower moved to, and the lake "
                             "has not placed itself in its binlogs yet: run the follower "
                             "(nothing was changed)")
        if known is None and floor is not None and seq <= floor.file_seq:
            # A lake started from a snapshot, or gone on after a failover,
            # reads that server's binlogs from the floor's position on.
            if seq < floor.file_seq:
                continue
            known = FileRead(seq, path, floor.pos, mark)
        if known is not None and known.fingerprint != mark:
            raise ValueError(f"{path} is not the {name} read before (its format description "
                             "differs): use a new output directory")
        start = known.end if known else FIRST_EVENT
        stop = None if limits is None else limits[name]
        if known is None and stop is not None and stop <= FIRST_EVENT:
            # A copy the copier has just begun (its magic not on disk for
            # sure, or nothing yet: an empty file cannot be mapped): a later run's.
            continue
        if os.path.getsize(path) < start:
            raise ValueError(f"{path} is shorter than the {start} bytes read before: "
                             "use a new output directory")
        found = scan(path, start=start, stop=stop)
        if found.framing is None:
            warnings.append(f"{path}: {found.stopped}, skipped")
            continue
        if known is None and stop is not None and stop < found.framing.fde_end:
            continue
        size = found.size if stop is None else min(found.size, stop)
        if not found.framing.in_use and found.closed_end < size:
            # A closed file should end with a whole transaction and a whole event.
            reason = found.stopped or "the last transaction has no end"
            warnings.append(f"{path}: read up to offset {found.closed_end} of {size}: {reason}")
        end = max(found.closed_end, start)
        entries[name] = FileRead(seq, path, end, mark,
                                 found.rotates_to or (known.next if known else None))
        if end > start:
            split = Split(path, seq, start, end)
            segments.append(split)
            scans[split] = found
    _refuse_other_successors({**manifest.files, **entries})
    return segments, scans, entries


def catch_up(files, manifest: Manifest, wanted: TableFilter) -> list:
    """The ranges of binlogs read before to read again, for tables the
    selection (--tables) selects and changes/ does not hold (a table newly
    selected; one selected again after runs that did not select it), each
    range from where changes/ holds the file for some of them (`holds`)
    to where the lake read it. Refused in one line where such a file is not
    given again, or the lake started from a snapshot (one of other tables).
    A selection that only narrows an earlier one needs nothing: its tables
    are held."""
    chosen = sorted(wanted.patterns)
    given = {os.path.basename(path): (path, seq) for path, seq in files}
    needed = []
    for name, entry in sorted(manifest.files.items(), key=lambda item: item[1].file_seq):
        holds = manifest.holds(name, wanted.patterns)
        whole = [set(held.patterns) for held in holds if held.end >= entry.end]
        if any(not held or (chosen and set(chosen) <= held) for held in whole):
            continue
        starts = sorted({FIRST_EVENT} | {held.end for held in holds if held.end < entry.end})
        needed.append((name, entry, starts))
    if not needed:
        return []
    subject = f"--tables {','.join(chosen)}" if chosen else "a run without --tables"
    if manifest.snapshot:
        raise ValueError(f"{subject} selects tables this lake has not read, and it started from "
                         "a snapshot of other tables: use a new output directory (nothing was "
                         "changed)")
    missing = [name for name, _, _ in needed if name not in given]
    if missing:
        where = (missing[0] if len(missing) == 1
                 else f"{missing[0]} to {missing[-1]} ({len(missing)} files)")
        if any(manifest.files[name].copy_removed for name in missing):
            # The follower removed its copies (binlake.spark.state.copies):
            # the server's tables are read anew instead.
            raise ValueError(f"{subject} selects tables this lake has not read from {where}, "
                             "whose copies were removed (--keep-binlogs): read them anew from "
                             "the server with binlake pipeline --out DIR --snapshot-tables "
                             "PATTERNS (MariaDB), or use a new output directory (nothing was "
                             "changed)")
        raise ValueError(f"{subject} selects tables this lake has not read from {where}: give "
                         f"{'it' if len(missing) == 1 else 'them'} again with the new binlogs, "
                         "or use a new output directory (nothing was changed)")
    splits = []
    for name, entry, starts in needed:
        path, seq = given[name]
        if fingerprint(path) != entry.fingerprint:
            raise ValueError(f"{path} is not the {name} read before (its format description "
                             "differs): use a new output directory")
        splits += [Split(path, seq, start, entry.end) for start in starts if start < entry.end]
    return splits


def _refuse_holes(files, manifest: Manifest) -> None:
    """Files read before and files given now must follow one another by
    number: a file older than the last one read that was never read, or a
    number missing between them, would leave changes out of the lake."""
    read = {entry.file_seq: name for name, entry in manifest.files.items()}
    given = {seq: os.path.basename(path) for path, seq in files
             if os.path.basename(path) not in manifest.files
             and (manifest.floor_of(seq) is None or seq >= manifest.floor_of(seq).file_seq)}
    if read:
        last = max(read)
        older = sorted(seq for seq in given if seq < last)
        if older:
            raise ValueError(f"{given[older[0]]} is older than {read[last]}, the last binlog "
                             "this lake has read, and was never read: nothing was changed "
                             "(a binlog's changes go in in order; use a new output directory)")
    named = {**read, **given}
    numbers = sorted(named)
    for before, after in zip(numbers, numbers[1:]):
        if after // FAILOVER_FILES != before // FAILOVER_FILES:
            continue  # the next server's binlogs: the failover's floor says where they go on
        if after != before + 1:
            first, last = (numbered(named[after], (before + 1) % FAILOVER_FILES),
                           numbered(named[after], (after - 1) % FAILOVER_FILES))
            missing = (f"{first} was" if first == last else f"{first} to {last} were")
            raise ValueError(f"{named[after]} follows {named[before]}, but {missing} never read: "
                             "nothing was changed; give " + ("it" if first == last else "them")
                             + " too")


def _refuse_other_successors(entries: dict) -> None:
    """A closed binlog names the next one in its ROTATE event: the file read
    after it must be that one (a file of another server or another lineage
    under the next number would splice two histories)."""
    by_seq = {entry.file_seq: name for name, entry in entries.items()}
    for seq, name in sorted(by_seq.items()):
        expected = entries[name].next
        successor = by_seq.get(seq + 1)
        if expected and successor and successor != expected:
            raise ValueError(f"{name} rotates to {expected}, but the next binlog given is "
                             f"{successor}: nothing was changed (is it another server's?); to go "
                             f"on, give {expected}, or use a new output directory for the "
                             "other server")


__all__ = ["unread_bytes", "fingerprint", "new_segments", "catch_up"]
