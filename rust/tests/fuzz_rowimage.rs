//! Fuzzing of row-image decoding: any layout and any bytes must give values
//! or a `ValueError`, never a panic, an endless loop or an out-of-bounds read.
//!
//! Strategy: cargo-fuzz needs a nightly compiler, which the project does not
//! use, so this is a plain seeded harness (see `fuzz/README.md`): a small
//! xorshift generator builds random layouts (every type code 0-255, boundary
//! and random metadata, random columns-present bitmaps, every operation,
//! PRE_GA and partial updates) and row data that is either random or a
//! plausible image of the layout then mutated (bit flips, truncation, length
//! prefixes set huge, bytes inserted). `cargo test` runs a quick sample; the
//! `#[ignore]`d test runs as many cases as `FUZZ_CASES` says, from `FUZZ_SEED`.
//! Run the long one in release mode, and in debug mode too: debug builds
//! check integer overflow, which is where arithmetic on corrupt values panics.

use binlake_native::layout::{Column, Kind, Layout};
use binlake_native::rowimage::{
    datetime_hires_parts, decimal_digits, decode_rows, frac_bytes, time2_parts, time_hires_parts,
    timestamp_hires, DateTimeParts, DecimalValue, Operation, Plan, Role, RowSink, RowsData,
    TimeParts, ValueResult, ValueSink, DATETIME_HIRES_BYTES, SEC_PART_BYTES, TIME_HIRES_BYTES,
};

/// xorshift64*: seeded, reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const KNOWN_TYPES: [u8; 37] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 140, 141, 242, 243,
    244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255,
];
const INTERESTING_META: [u16; 30] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xFF, 0x100, 0x1FF, 0xFFFF, 0x8000, 0x7FFF, 0x0A02, 0x4100,
    0x411E, 0x411F, 0x0107, 0x0708, 0x0800, 0xF701, 0xF702, 0xF808, 0xF809, 0xFE14, 0xCEFC, 0x3000,
];
const INTERESTING_BYTES: [u8; 10] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0xFB, 0xFC, 0xFD, 0x30];

fn random_type_and_meta(rng: &mut Rng) -> (u8, u16) {
    let type_code = if rng.chance(85) {
        rng.pick(&KNOWN_TYPES)
    } else {
        rng.byte()
    };
    let meta = match rng.below(4) {
        0 | 1 => rng.pick(&INTERESTING_META),
        2 => rng.byte() as u16,
        _ => rng.next() as u16,
    };
    (type_code, meta)
}

/// Random columns; in half of the layouts every column has a decodable kind
/// (tried a few times), so that cases go past the first unsupported column.
fn random_layout(rng: &mut Rng) -> Layout {
    let count = rng.below(14);
    let decodable = rng.chance(50);
    let columns = (0..count)
        .map(|i| {
            let (mut type_code, mut meta) = random_type_and_meta(rng);
            for _ in 0..20 {
                if !decodable || !matches!(Kind::of(type_code, meta), Kind::Unsupported { .. }) {
                    break;
                }
                (type_code, meta) = random_type_and_meta(rng);
            }
            let mut col = Column::new(i, type_code, meta, rng.chance(50));
            col.unsigned = rng.chance(50);
            col
        })
        .collect();
    Layout {
        database: "db".into(),
        table: "t".into(),
        columns,
    }
}

/// Bytes a well-formed value of `kind` could have (lengths kept small).
fn plausible_value(kind: Kind, rng: &mut Rng, out: &mut Vec<u8>) {
    let fixed = |n: usize, rng: &mut Rng, out: &mut Vec<u8>| {
        out.extend((0..n).map(|_| rng.byte()));
    };
    let prefixed = |len_bytes: u8, rng: &mut Rng, out: &mut Vec<u8>| {
        let n = rng.below(12);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..len_bytes as usize]);
        out.extend((0..n).map(|_| rng.byte()));
    };
    match kind {
        Kind::Int { bytes } => fixed(bytes as usize, rng, out),
        Kind::Float => fixed(4, rng, out),
        Kind::Double => fixed(8, rng, out),
        Kind::Decimal { size, .. } => fixed(size as usize, rng, out),
        Kind::Year => fixed(1, rng, out),
        Kind::Date | Kind::TimeOld => fixed(3, rng, out),
        Kind::DatetimeOld => fixed(8, rng, out),
        Kind::TimestampOld => fixed(4, rng, out),
        Kind::Timestamp2 { fsp } => fixed(4 + frac_bytes(fsp), rng, out),
        Kind::Datetime2 { fsp } => fixed(5 + frac_bytes(fsp), rng, out),
        Kind::Time2 { fsp } => fixed(3 + frac_bytes(fsp), rng, out),
        Kind::TimestampHires { fsp } => fixed(4 + SEC_PART_BYTES[fsp as usize], rng, out),
        Kind::DatetimeHires { fsp } => fixed(DATETIME_HIRES_BYTES[fsp as usize], rng, out),
        Kind::TimeHires { fsp } => fixed(TIME_HIRES_BYTES[fsp as usize], rng, out),
        Kind::Bit { bytes, .. } | Kind::Enum { bytes } | Kind::Set { bytes } => {
            fixed(bytes as usize, rng, out)
        }
        Kind::String { len_bytes }
        | Kind::Blob { len_bytes }
        | Kind::Geometry { len_bytes }
        | Kind::Json { len_bytes }
        | Kind::Vector { len_bytes } => prefixed(len_bytes, rng, out),
        Kind::CompressedString { len_bytes, .. } | Kind::CompressedBlob { len_bytes } => {
            let stored = plausible_stored(rng);
            out.extend_from_slice(&(stored.len() as u32).to_le_bytes()[..len_bytes as usize]);
            out.extend_from_slice(&stored);
        }
        Kind::Unsupported { .. } => {}
    }
}

/// A MariaDB compressed column's stored value: empty, kept as is behind a
/// header byte of 0, or deflated (raw or zlib-wrapped) behind its header
/// and declared length (sometimes not the real one).
fn plausible_stored(rng: &mut Rng) -> Vec<u8> {
    use std::io::Write;
    let value: Vec<u8> = (0..rng.below(40))
        .map(|_| b'a' + rng.below(3) as u8)
        .collect();
    match rng.below(4) {
        0 => Vec::new(),
        1 => [&[0u8][..], &value].concat(),
        _ => {
            let raw = rng.chance(50);
            let mut deflated = Vec::new();
            if raw {
                let mut e = flate2::write::DeflateEncoder::new(&mut deflated, Default::default());
                e.write_all(&value).unwrap();
                e.finish().unwrap();
            } else {
                let mut e = flate2::write::ZlibEncoder::new(&mut deflated, Default::default());
                e.write_all(&value).unwrap();
                e.finish().unwrap();
            }
            let declared = if rng.chance(80) {
                value.len() as u32
            } else {
                rng.next() as u32 % 64
            };
            let width = 1 + rng.below(2);
            let mut out = vec![0x80 | width as u8 | if raw { 8 } else { 0 }];
            out.extend_from_slice(&declared.to_be_bytes()[4 - width..]);
            out.extend_from_slice(&deflated);
            out
        }
    }
}

fn plausible_image(layout: &Layout, plan: &Plan, rng: &mut Rng, out: &mut Vec<u8>) {
    let nulls: Vec<u8> = (0..plan.null_bytes)
        .map(|_| if rng.chance(70) { 0 } else { rng.byte() })
        .collect();
    out.extend_from_slice(&nulls);
    for (slot, &index) in plan.columns.iter().enumerate() {
        let bit = slot + plan.null_shift as usize;
        if nulls[bit / 8] >> (bit % 8) & 1 == 0 {
            plausible_value(layout.columns[index].kind, rng, out);
        }
    }
}

fn mutate(data: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..rng.below(4) {
        match rng.below(6) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] = rng.pick(&INTERESTING_BYTES);
            }
            2 => data.truncate(rng.below(data.len() + 1)),
            3 => {
                let at = rng.below(data.len() + 1);
                let b = rng.byte();
                data.insert(at, b);
            }
            4 if data.len() >= 4 => {
                // a length prefix (or anything) set huge
                let at = rng.below(data.len() - 3);
                data[at..at + 4].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
            }
            _ => data.extend((0..rng.below(8)).map(|_| rng.byte())),
        }
    }
}

/// A sink that uses every part of every value, as the real sinks do, and
/// counts what it was given so the decoder's bookkeeping can be checked.
#[derive(Default)]
struct CheckingSink {
    values: usize,
    images: usize,
    rows: usize,
    text: Vec<u8>,
}

impl ValueSink for CheckingSink {
    fn null(&mut self, _: &Column) -> ValueResult {
        self.values += 1;
        Ok(())
    }
    fn int(&mut self, _: &Column, value: i64, bytes: u8) -> ValueResult {
        assert!((1..=8).contains(&bytes));
        self.text.extend_from_slice(value.to_string().as_bytes());
        self.values += 1;
        Ok(())
    }
    fn float(&mut self, _: &Column, value: f32) -> ValueResult {
        self.text.extend_from_slice(value.to_string().as_bytes());
        self.values += 1;
        Ok(())
    }
    fn double(&mut self, _: &Column, value: f64) -> ValueResult {
        self.text.extend_from_slice(value.to_string().as_bytes());
        self.values += 1;
        Ok(())
    }
    fn decimal(&mut self, _: &Column, value: &DecimalValue, _: &[u8]) -> ValueResult {
        assert!(!value.digits.is_empty() && value.digits.iter().all(u8::is_ascii_digit));
        value.write_text(&mut self.text);
        self.values += 1;
        Ok(())
    }
    fn year(&mut self, _: &Column, year: u32) -> ValueResult {
        assert!(year == 0 || (1901..=2155).contains(&year));
        self.values += 1;
        Ok(())
    }
    fn date(&mut self, _: &Column, year: u32, month: u32, day: u32) -> ValueResult {
        self.text
            .extend_from_slice(format!("{year:04}-{month:02}-{day:02}").as_bytes());
        self.values += 1;
        Ok(())
    }
    fn datetime(&mut self, _: &Column, t: DateTimeParts, _: &[u8]) -> ValueResult {
        let text = format!(
            "{:04}-{:02} {}:{}:{}.{}",
            t.year, t.month, t.hour, t.minute, t.second, t.micro
        );
        self.text.extend_from_slice(text.as_bytes());
        self.values += 1;
        Ok(())
    }
    fn datetime_negative(&mut self, _: &Column, packed: i64, _: &[u8]) -> ValueResult {
        assert!(packed < 0);
        self.values += 1;
        Ok(())
    }
    fn timestamp(&mut self, _: &Column, _: u32, micro: u32, fsp: u8) -> ValueResult {
        assert!(fsp <= 6 && micro < 16_777_216 * 100);
        self.values += 1;
        Ok(())
    }
    fn time(&mut self, _: &Column, t: TimeParts, _: &[u8]) -> ValueResult {
        assert!(t.minutes < 100 && t.seconds < 100);
        self.values += 1;
        Ok(())
    }
    fn bit(&mut self, _: &Column, _: u64, raw: &[u8]) -> ValueResult {
        assert!(raw.len() <= 8);
        self.values += 1;
        Ok(())
    }
    fn string(&mut self, _: &Column, bytes: &[u8]) -> ValueResult {
        self.text.extend_from_slice(bytes);
        self.values += 1;
        Ok(())
    }
    fn blob(&mut self, c: &Column, bytes: &[u8]) -> ValueResult {
        self.string(c, bytes)
    }
    fn geometry(&mut self, c: &Column, bytes: &[u8]) -> ValueResult {
        self.string(c, bytes)
    }
    fn json(&mut self, c: &Column, bytes: &[u8]) -> ValueResult {
        self.string(c, bytes)
    }
    fn json_diff(&mut self, c: &Column, bytes: &[u8]) -> ValueResult {
        self.string(c, bytes)
    }
    fn vector(&mut self, c: &Column, bytes: &[u8]) -> ValueResult {
        self.string(c, bytes)
    }
    fn enum_index(&mut self, _: &Column, _: u16, raw: &[u8]) -> ValueResult {
        assert!((1..=2).contains(&raw.len()));
        self.values += 1;
        Ok(())
    }
    fn set_mask(&mut self, _: &Column, _: u64, raw: &[u8]) -> ValueResult {
        assert!((1..=8).contains(&raw.len()));
        self.values += 1;
        Ok(())
    }
}

impl RowSink for CheckingSink {
    fn start_row(&mut self, _: Operation) -> ValueResult {
        Ok(())
    }
    fn start_image(&mut self, _: Role, _: &Plan) -> ValueResult {
        self.images += 1;
        Ok(())
    }
    fn end_image(&mut self, _: Role) -> ValueResult {
        Ok(())
    }
    fn end_row(&mut self) -> ValueResult {
        self.rows += 1;
        if self.text.len() > 1 << 16 {
            self.text.clear();
        }
        Ok(())
    }
}

fn random_bitmap(layout: &Layout, rng: &mut Rng) -> Vec<u8> {
    let bytes = layout.columns.len().div_ceil(8) + rng.below(2);
    (0..bytes)
        .map(|_| if rng.chance(60) { 0xFF } else { rng.byte() })
        .collect()
}

/// One case: never panics; a success decodes the data exactly to its end.
/// Returns whether the data decoded.
fn one_case(seed: u64) -> bool {
    let mut rng = Rng::new(seed);
    let layout = random_layout(&mut rng);
    let operation = rng.pick(&[Operation::Insert, Operation::Update, Operation::Delete]);
    let pre_ga = rng.chance(10);
    let partial = operation == Operation::Update && rng.chance(15);
    let before = Plan::new(&layout, &random_bitmap(&layout, &mut rng), pre_ga);
    let after = Plan::new(&layout, &random_bitmap(&layout, &mut rng), false);
    let mut data = Vec::new();
    if rng.chance(25) {
        data.extend((0..rng.below(64)).map(|_| rng.byte()));
    } else {
        for _ in 0..1 + rng.below(3) {
            plausible_image(&layout, &before, &mut rng, &mut data);
            if operation == Operation::Update {
                if partial {
                    data.push(rng.pick(&[0, 1, 1, 3, 0xFC]));
                    data.push(rng.byte());
                }
                plausible_image(&layout, &after, &mut rng, &mut data);
            }
        }
        if rng.chance(60) {
            mutate(&mut data, &mut rng);
        }
    }
    let rows = RowsData {
        operation,
        partial,
        before: &before,
        after: &after,
        data: &data,
    };
    let mut sink = CheckingSink::default();
    match decode_rows(&layout, &rows, &mut sink) {
        Ok(count) => {
            assert_eq!(count, sink.rows);
            let per_row = if operation == Operation::Update { 2 } else { 1 };
            assert_eq!(sink.images, count * per_row);
            true
        }
        Err((offset, index, error)) => {
            assert!(
                offset < data.len().max(1),
                "error offset {offset} past {} bytes",
                data.len()
            );
            // the failing row is the one after the last complete one (a row of
            // no bytes is refused after it was delivered)
            assert!(
                index == sink.rows || index + 1 == sink.rows,
                "row {index} failed"
            );
            assert!(!error.detail.is_empty());
            false
        }
    }
}

/// The value-level helpers on any bytes of their size.
fn helpers_case(seed: u64) {
    let mut rng = Rng::new(seed ^ 0xDEC1_3A11);
    let precision = 1 + rng.below(65) as u8;
    let scale = rng.below(precision.min(30) as usize + 1) as u8;
    let size = binlake_native::layout::decimal_size(precision, scale);
    let raw: Vec<u8> = (0..size)
        .map(|_| {
            if rng.chance(20) {
                rng.pick(&INTERESTING_BYTES)
            } else {
                rng.byte()
            }
        })
        .collect();
    let mut out = [0u8; 96];
    let (_, n) = decimal_digits(&raw, precision, scale, &mut out);
    assert!((1..=96).contains(&n));
    let fsp = rng.below(7) as u8;
    let raw: Vec<u8> = (0..3 + frac_bytes(fsp)).map(|_| rng.byte()).collect();
    let t = time2_parts(&raw, fsp);
    assert!(t.minutes < 64 && t.seconds < 64 && t.hours < 1024);
    // the hires helpers at any width up to 8 bytes and any fsp (overflow-free)
    let fsp = rng.below(9) as u8;
    let raw: Vec<u8> = (0..rng.below(9)).map(|_| rng.byte()).collect();
    let t = time_hires_parts(&raw, fsp);
    assert!(t.minutes < 60 && t.seconds < 60 && t.hours < 9984 && t.micro < 1_000_000);
    let d = datetime_hires_parts(&raw, fsp);
    assert!(d.month < 13 && d.day < 32 && d.hour < 24 && d.micro < 1_000_000);
    let _ = timestamp_hires(&raw, fsp);
    let type_code = rng.byte();
    let meta = rng.next() as u16;
    let _ = Kind::of(type_code, meta);
}

/// Runs the cases; returns how many decoded without error.
fn run(first: u64, cases: u64) -> u64 {
    let mut decoded = 0;
    for seed in first..first + cases {
        let result = std::panic::catch_unwind(|| {
            helpers_case(seed);
            one_case(seed)
        });
        match result {
            Ok(ok) => decoded += u64::from(ok),
            Err(_) => panic!("fuzz case {seed} panicked (replay: FUZZ_SEED={seed} FUZZ_CASES=1)"),
        }
    }
    decoded
}

#[test]
fn fuzz_rowimage_quick() {
    let decoded = run(0, 20_000);
    // a harness whose inputs all fail at the first byte would test nothing
    assert!(decoded > 2_000, "only {decoded} of 20000 cases decoded");
}

/// `FUZZ_SEED=0 FUZZ_CASES=10000000 cargo test --release --test fuzz_rowimage -- --ignored`
#[test]
#[ignore]
fn fuzz_rowimage_long() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (first, cases) = (env("FUZZ_SEED", 1 << 32), env("FUZZ_CASES", 1_000_000));
    let decoded = run(first, cases);
    eprintln!("{cases} cases from seed {first}: {decoded} decoded, the rest refused, no panic");
}

#[test]
fn every_type_code_and_boundary_meta_has_a_kind() {
    for type_code in 0..=255u8 {
        for &meta in &INTERESTING_META {
            let _ = Kind::of(type_code, meta);
        }
        for meta in (0..=u16::MAX).step_by(257) {
            let _ = Kind::of(type_code, meta);
        }
    }
}

/// Found by the differential fuzzer: images of no columns take no bytes, so
/// data left after them used to be decoded as empty rows forever.
#[test]
fn images_of_no_columns_with_data_left_are_refused() {
    let layout = Layout {
        database: "db".into(),
        table: "t".into(),
        columns: vec![],
    };
    let plan = Plan::new(&layout, &[], false);
    let data = [1u8, 2, 3];
    for operation in [Operation::Insert, Operation::Update, Operation::Delete] {
        let rows = RowsData {
            operation,
            partial: false,
            before: &plan,
            after: &plan,
            data: &data,
        };
        let (offset, index, error) =
            decode_rows(&layout, &rows, &mut CheckingSink::default()).unwrap_err();
        assert_eq!((offset, index), (0, 0));
        assert!(error.detail.contains("no columns"), "{}", error.detail);
    }
    let empty = RowsData {
        operation: Operation::Insert,
        partial: false,
        before: &plan,
        after: &plan,
        data: &[],
    };
    assert_eq!(
        decode_rows(&layout, &empty, &mut CheckingSink::default()),
        Ok(0)
    );
}
