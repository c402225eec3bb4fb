//! Quantities with units, as the scenario file and the flags write them, and back.
//!
//! Parsing: [`parse_time`] (seconds), [`parse_size`] (bytes), [`parse_bandwidth`]
//! (bytes per second). A plain number is in the base unit. Each accepts an optional
//! space between the number and the unit. Decimal scaling is done on the text, so
//! `0.05ns` is the `f64` nearest to 5e-11 and `100Gbps` is exactly 12.5e9.
//!
//! YAML numbers (`alpha: 1e-6`, `segment: 4096`) reach the same parsers through
//! [`time_value`], [`size_value`] and [`bandwidth_value`], which take a [`ParamValue`].
//!
//! Formatting for people: [`fmt_time`], [`fmt_bytes`], [`fmt_bandwidth`] (three
//! significant digits), and [`fmt_size_short`] (exact, no space, parses back).
//!
//! It sits below the scenario, the algorithms and the reports, which all read it.

/// A parameter's value as written: numbers and strings; units are parsed by the algorithm.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// A whole number.
    Int(u64),
    /// A number with a fraction.
    Float(f64),
    /// Anything else (`256KiB`, `fold`).
    Str(String),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            // Far from 1 in scientific notation: `2.5e-310`, not 310 digits.
            ParamValue::Float(v) if *v != 0.0 && v.is_finite() && !(1e-5..1e16).contains(&v.abs()) => {
                write!(f, "{v:?}")
            }
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Str(s) => f.write_str(s),
        }
    }
}

/// Time units: suffix and power of ten.
const TIME_UNITS: &[(&str, i32)] = &[
    ("s", 0),
    ("ms", -3),
    ("us", -6),
    ("\u{b5}s", -6),  // µ MICRO SIGN
    ("\u{3bc}s", -6), // μ GREEK SMALL LETTER MU
    ("ns", -9),
    ("ps", -12),
];

const TIME_ALLOWED: &str = "s, ms, us, \u{b5}s, ns, ps, or a plain number of seconds";

/// Size units: suffix and multiplier in bytes.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("PB", 1_000_000_000_000_000),
    ("EB", 1_000_000_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    // The report prints sizes up to EiB (`fmt_bytes`); what it prints, a size reads back.
    // Most of them wrap a byte count: the size's own limit (2^64 - 1 bytes, 16 EiB less
    // one) and the scenario's per-P limit refuse those with the figure.
    ("PiB", 1 << 50),
    ("EiB", 1 << 60),
];

const SIZE_ALLOWED: &str = "B, KB, MB, GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB, or a plain number of bytes";

/// How a bandwidth unit scales its number into bytes per second.
#[derive(Clone, Copy)]
enum Scale {
    /// Bits per second times `10^exp`: divided by 8.
    Bits(i32),
    /// Bytes per second times `10^exp`.
    Bytes(i32),
    /// Bytes per second times `2^exp`.
    BinBytes(i32),
}

/// Bandwidth units. `Gbps`/`Gb/s`/`Gbit/s` are bits, `GBps`/`GB/s` bytes.
const BANDWIDTH_UNITS: &[(&str, Scale)] = &[
    ("bps", Scale::Bits(0)),
    ("b/s", Scale::Bits(0)),
    ("bit/s", Scale::Bits(0)),
    ("Kbps", Scale::Bits(3)),
    ("kbps", Scale::Bits(3)),
    ("Kb/s", Scale::Bits(3)),
    ("kb/s", Scale::Bits(3)),
    ("Kbit/s", Scale::Bits(3)),
    ("kbit/s", Scale::Bits(3)),
    ("Mbps", Scale::Bits(6)),
    ("Mb/s", Scale::Bits(6)),
    ("Mbit/s", Scale::Bits(6)),
    ("Gbps", Scale::Bits(9)),
    ("Gb/s", Scale::Bits(9)),
    ("Gbit/s", Scale::Bits(9)),
    ("Tbps", Scale::Bits(12)),
    ("Tb/s", Scale::Bits(12)),
    ("Tbit/s", Scale::Bits(12)),
    ("Bps", Scale::Bytes(0)),
    ("B/s", Scale::Bytes(0)),
    ("KBps", Scale::Bytes(3)),
    ("kBps", Scale::Bytes(3)),
    ("KB/s", Scale::Bytes(3)),
    ("kB/s", Scale::Bytes(3)),
    ("MBps", Scale::Bytes(6)),
    ("MB/s", Scale::Bytes(6)),
    ("GBps", Scale::Bytes(9)),
    ("GB/s", Scale::Bytes(9)),
    ("TBps", Scale::Bytes(12)),
    ("TB/s", Scale::Bytes(12)),
    ("KiBps", Scale::BinBytes(10)),
    ("KiB/s", Scale::BinBytes(10)),
    ("MiBps", Scale::BinBytes(20)),
    ("MiB/s", Scale::BinBytes(20)),
    ("GiBps", Scale::BinBytes(30)),
    ("GiB/s", Scale::BinBytes(30)),
    ("TiBps", Scale::BinBytes(40)),
    ("TiB/s", Scale::BinBytes(40)),
];

const BANDWIDTH_ALLOWED: &str = "bits per second: bps, Kbps, Mbps, Gbps, Tbps \
     (or Gb/s, Gbit/s, ...); bytes per second: B/s, KB/s, MB/s, GB/s, TB/s, \
     KiB/s, MiB/s, GiB/s, TiB/s (or GBps, ...); or a plain number of bytes per second";

/// A number as written: its decimal digits and where the decimal point goes.
/// The value is `digits * 10^exp`, negated if `negative`.
struct Decimal {
    negative: bool,
    /// Integer and fraction digits, concatenated.
    digits: String,
    /// Power of ten applying to `digits`.
    exp: i64,
}

impl Decimal {
    /// The value times `10^shift`, correctly rounded to `f64`.
    fn to_f64(&self, shift: i64) -> f64 {
        let e = self.exp.saturating_add(shift);
        let sign = if self.negative { "-" } else { "" };
        let digits = if self.digits.is_empty() { "0" } else { &self.digits };
        format!("{sign}{digits}e{e}").parse().unwrap_or(f64::NAN)
    }
}

/// Split `s` (trimmed) into a leading decimal number and the rest (trimmed).
/// Returns `None` when `s` does not start with a number.
fn split_number(s: &str) -> Option<(Decimal, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = &s[int_start..i];
    let mut frac_digits = "";
    if i < b.len() && b[i] == b'.' {
        let f0 = i + 1;
        let mut j = f0;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        frac_digits = &s[f0..j];
        i = j;
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let mut exp: i64 = 0;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let d0 = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        // An exponent only if digits follow; otherwise `e` starts the unit.
        if j > d0 {
            exp = s[i + 1..j].parse::<i64>().unwrap_or(i64::MAX / 2).clamp(-100_000, 100_000);
            i = j;
        }
    }
    let mut digits = String::with_capacity(int_digits.len() + frac_digits.len());
    digits.push_str(int_digits);
    digits.push_str(frac_digits);
    exp -= frac_digits.len() as i64;
    Some((Decimal { negative, digits, exp }, s[i..].trim_start()))
}

/// Parse a time into seconds: `1us`, `0.5ns`, `2ms`, `3s`, `250 ps`, `1e-6`.
///
/// Units: `s`, `ms`, `us` (or `µs`), `ns`, `ps`; a plain number is seconds. The result
/// is finite and at least 0. Errors say what is allowed.
///
/// ```
/// use allreduce_sim::scenario::units::parse_time;
/// assert_eq!(parse_time("1us"), Ok(1e-6));
/// assert_eq!(parse_time("0.05ns"), Ok(5e-11));
/// assert_eq!(parse_time("1e-6"), Ok(1e-6));
/// assert!(parse_time("1xs").unwrap_err().contains("allowed: s, ms"));
/// ```
pub fn parse_time(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!("empty time; expected a number and a unit such as 1us; allowed units: {TIME_ALLOWED}"));
    }
    let Some((num, unit)) = split_number(t) else {
        return Err(format!(
            "'{t}' is not a time; expected a number and a unit such as 1us; \
             allowed units: {TIME_ALLOWED}"
        ));
    };
    let pow = if unit.is_empty() {
        0
    } else {
        match TIME_UNITS.iter().find(|(u, _)| *u == unit) {
            Some(&(_, p)) => p,
            None => {
                return Err(format!("unknown time unit '{unit}' in '{t}'; allowed: {TIME_ALLOWED}"));
            }
        }
    };
    let v = num.to_f64(i64::from(pow));
    if !v.is_finite() {
        return Err(format!("time '{t}' is not a finite number"));
    }
    if num.negative && num.digits.bytes().any(|d| d != b'0') {
        return Err(format!("time '{t}' is negative; it must be at least 0"));
    }
    // A time written as more than nothing is not read as nothing: below the smallest
    // double (about 5e-324 s) it would silently be 0.
    if v == 0.0 && num.digits.bytes().any(|d| d != b'0') {
        return Err(format!(
            "time '{t}' is below the smallest time that can be held (about 5e-324 s), so it would be read as 0; \
             write 0 for no time, or a time of 5e-324 s or more"
        ));
    }
    // `-0` parses as -0.0; times are never negative zero.
    Ok(v.abs())
}

/// Parse a size into bytes: `4KiB`, `1MiB`, `1MB` (10^6), `1KB` or `1kB` (1000), `1000`,
/// `1B`, `2.5MiB`.
///
/// Units: `B`, `KB`, `MB`, `GB`, `TB` (powers of 1000), `KiB`, `MiB`, `GiB`, `TiB`
/// (powers of 1024); a plain number is bytes. Fractions are allowed only when the result
/// is a whole number of bytes. Arithmetic is exact.
///
/// ```
/// use allreduce_sim::scenario::units::parse_size;
/// assert_eq!(parse_size("4KiB"), Ok(4096));
/// assert_eq!(parse_size("2.5MiB"), Ok(2_621_440));
/// assert_eq!(parse_size("1MB"), Ok(1_000_000));
/// assert!(parse_size("4KiBs").unwrap_err().contains("allowed: B, KB"));
/// ```
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!(
            "empty size; expected a number of bytes or a number and a unit such as 4KiB; \
             allowed units: {SIZE_ALLOWED}"
        ));
    }
    let Some((num, unit)) = split_number(t) else {
        return Err(format!(
            "'{t}' is not a size; expected a number and a unit such as 4KiB; \
             allowed units: {SIZE_ALLOWED}"
        ));
    };
    let factor = if unit.is_empty() {
        1
    } else {
        match SIZE_UNITS.iter().find(|(u, _)| *u == unit) {
            Some(&(_, f)) => f,
            None => {
                return Err(format!("unknown size unit '{unit}' in '{t}'; allowed: {SIZE_ALLOWED}"));
            }
        }
    };
    let digits = num.digits.trim_start_matches('0');
    if digits.is_empty() {
        return Ok(0);
    }
    if num.negative {
        return Err(format!("size '{t}' is negative; it must be at least 0 bytes"));
    }
    let too_large = || format!("size '{t}' is too large (at most {} bytes)", u64::MAX);
    // value = digits * 10^exp * factor, in exact integer arithmetic.
    let mut n: u128 = digits.parse().map_err(|_| too_large())?;
    n = n.checked_mul(u128::from(factor)).ok_or_else(too_large)?;
    if num.exp >= 0 {
        for _ in 0..num.exp {
            n = n.checked_mul(10).ok_or_else(too_large)?;
        }
    } else {
        for _ in 0..(-num.exp) {
            if !n.is_multiple_of(10) {
                return Err(format!("size '{t}' is not a whole number of bytes"));
            }
            n /= 10;
        }
    }
    u64::try_from(n).map_err(|_| too_large())
}

/// Parse a bandwidth into bytes per second: `100Gbps` or `25Gb/s` (bits, divided by 8),
/// `12.5GB/s` or `12.5GBps` (bytes), `1.5GiB/s` (binary bytes), `12.5e9` (plain bytes/s).
///
/// The result is finite and greater than 0.
///
/// ```
/// use allreduce_sim::scenario::units::parse_bandwidth;
/// assert_eq!(parse_bandwidth("100Gbps"), Ok(12.5e9));
/// assert_eq!(parse_bandwidth("12.5GB/s"), Ok(12.5e9));
/// assert_eq!(parse_bandwidth("12.5e9"), Ok(12.5e9));
/// ```
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!(
            "empty bandwidth; expected a number and a unit such as 100Gbps; \
             allowed units: {BANDWIDTH_ALLOWED}"
        ));
    }
    let Some((num, unit)) = split_number(t) else {
        return Err(format!(
            "'{t}' is not a bandwidth; expected a number and a unit such as 100Gbps; \
             allowed units: {BANDWIDTH_ALLOWED}"
        ));
    };
    let scale = if unit.is_empty() {
        Scale::Bytes(0)
    } else {
        match BANDWIDTH_UNITS.iter().find(|(u, _)| *u == unit) {
            Some(&(_, sc)) => sc,
            None => {
                return Err(format!("unknown bandwidth unit '{unit}' in '{t}'; allowed: {BANDWIDTH_ALLOWED}"));
            }
        }
    };
    let v = match scale {
        // Dividing by 8 and multiplying by 2^k are exact in binary floating point.
        Scale::Bits(e) => num.to_f64(i64::from(e)) / 8.0,
        Scale::Bytes(e) => num.to_f64(i64::from(e)),
        Scale::BinBytes(e) => num.to_f64(0) * 2f64.powi(e),
    };
    if !v.is_finite() {
        return Err(format!("bandwidth '{t}' is not a finite number"));
    }
    if v <= 0.0 || num.negative {
        return Err(format!("bandwidth '{t}' must be greater than 0"));
    }
    Ok(v)
}

/// The text a YAML value stands for, for the unit parsers: numbers in their shortest
/// round-tripping decimal form (`1e-6` becomes `0.000001`), strings as written.
fn value_text(v: &ParamValue) -> String {
    v.to_string()
}

/// [`parse_time`] for a value written either as a YAML number (seconds) or a string.
pub fn time_value(v: &ParamValue) -> Result<f64, String> {
    parse_time(&value_text(v))
}

/// [`parse_size`] for a value written either as a YAML number (bytes) or a string.
pub fn size_value(v: &ParamValue) -> Result<u64, String> {
    parse_size(&value_text(v))
}

/// [`parse_bandwidth`] for a value written either as a YAML number (bytes per second)
/// or a string.
pub fn bandwidth_value(v: &ParamValue) -> Result<f64, String> {
    parse_bandwidth(&value_text(v))
}

/// `v` rounded to `digits` significant digits, as text with trailing zeros removed
/// (three: `1.5`, `789`, `12.3`); `v` is finite and not negative.
fn sig(v: f64, digits: i32) -> String {
    let decimals = if v == 0.0 || v >= 10f64.powi(digits - 1) {
        0
    } else {
        // digits before the point: 1 for [1, 10), 2 for [10, 100); more decimals below 1.
        (i64::from(digits) - 1 - v.log10().floor() as i64).max(0) as usize
    };
    let s = format!("{v:.decimals$}");
    trim_zeros(s)
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// `v` in the largest of `units` (each `(name, size)`, ascending) that keeps it at least 1
/// after rounding to `digits` significant digits, and to that many; the first unit below
/// that. Beyond the units, three significant digits in scientific notation.
fn scaled(v: f64, units: &[(&str, f64)], digits: i32) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    // The base unit is the one of size 1.
    let base = units.iter().find(|(_, f)| *f == 1.0).map_or(units[0].0, |u| u.0);
    if a.is_infinite() {
        return format!("{sign}inf {base}");
    }
    if a == 0.0 {
        return format!("0 {base}");
    }
    let mut chosen = 0;
    for (i, (_, f)) in units.iter().enumerate() {
        // Compare the rounded value so that 999.7 ns prints as 1 us, not 1000 ns.
        let r: f64 = sig(a / f, digits).parse().unwrap_or(0.0);
        if r >= 1.0 {
            chosen = i;
        }
    }
    let (name, f) = units[chosen];
    let x = a / f;
    // Beyond the units (a time of 1e300 s, a bandwidth of 1e-300 B/s), three significant
    // digits in scientific notation instead of hundreds of digits.
    if !(1e-3..1e6).contains(&x) {
        let s = format!("{x:.2e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        return format!("{sign}{}e{exponent} {name}", trim_zeros(mantissa.to_string()));
    }
    format!("{sign}{} {name}", sig(x, digits))
}

/// A relative difference `x` (0.031 for 3.1% slower) as `+3.1%`; past 10^4 (a time of
/// 1e302 s against microseconds would print 300 digits, or `+inf%` once times 100) as the
/// factor `x1.000e302`.
pub fn fmt_rel_diff(x: f64) -> String {
    if x.abs() < 1e4 { format!("{:+.1}%", 100.0 * x) } else { format!("x{:.3e}", 1.0 + x) }
}

/// The units times print in, ascending.
const PRINTED_TIME_UNITS: [(&str, f64); 5] = [("ps", 1e-12), ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)];

/// A time for people, three significant digits: `1.23 ms`, `4.56 us`, `789 ns`, `0 s`.
///
/// Units run from `ps` to `s`; trailing zeros are dropped (`1 us`, `1.5 us`).
pub fn fmt_time(seconds: f64) -> String {
    scaled(seconds, &PRINTED_TIME_UNITS, 3)
}

/// A time as [`fmt_time`] prints it but to six significant digits (`0 s`, `1.1024 us`,
/// `2.16384 us`): for the instants a report names, such as when a link fault struck,
/// which a user wrote to more than three digits and two of which may be close.
pub fn fmt_time_fine(seconds: f64) -> String {
    scaled(seconds, &PRINTED_TIME_UNITS, 6)
}

/// A byte count in full for messages quoting a size the user gave: `1 byte`, `12 bytes`.
pub fn count_bytes(n: u64) -> String {
    if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") }
}

/// A byte count for people, binary units, three significant digits: `100 B`, `4 KiB`,
/// `1 MiB`, `1.5 MiB`. Counts below 1024 are exact.
pub fn fmt_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    scaled(
        bytes as f64,
        &[
            ("B", 1.0),
            ("KiB", 1024.0),
            ("MiB", 1024f64.powi(2)),
            ("GiB", 1024f64.powi(3)),
            ("TiB", 1024f64.powi(4)),
            ("PiB", 1024f64.powi(5)),
            ("EiB", 1024f64.powi(6)),
        ],
        3,
    )
}

/// A bandwidth (bytes per second) for people, decimal units as nccl-tests prints them,
/// three significant digits: `11.6 GB/s`, `12.5 GB/s`, `800 MB/s`.
pub fn fmt_bandwidth(bytes_per_second: f64) -> String {
    scaled(
        bytes_per_second,
        &[("B/s", 1.0), ("KB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12), ("PB/s", 1e15)],
        3,
    )
}

/// A byte count as a short exact label that [`parse_size`] reads back: the largest
/// binary unit in which it has at most three decimals (`4KiB`, `1.5MiB`, `64MiB`,
/// `1000B`, `0B`).
pub fn fmt_size_short(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    for k in (1..UNITS.len()).rev() {
        let unit = 1u128 << (10 * k);
        let n = u128::from(bytes);
        if n >= unit && (n * 1000) % unit == 0 {
            let whole = n / unit;
            let frac = (n % unit) * 1000 / unit;
            return if frac == 0 {
                format!("{whole}{}", UNITS[k])
            } else {
                let f = format!("{frac:03}");
                format!("{whole}.{}{}", f.trim_end_matches('0'), UNITS[k])
            };
        }
    }
    format!("{bytes}B")
}

/// Whether `c` is a character a terminal does not show as itself: a control character,
/// or an invisible format character (zero-width spaces and joiners, the bidirectional
/// overrides and isolates that reorder the text after them, the line and paragraph
/// separators, a byte-order mark, a soft hyphen). Echoed raw, `si\u{200b}zes` reads as
/// `sizes` and `\u{202e}ring` as `gnir`.
pub fn is_unseen(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// `s` with every control character but the line feed and the tab, and every invisible
/// format character ([`is_unseen`]), written as a Rust escape (`\u{1b}`, `\r`,
/// `\u{202e}`): text from a scenario (its name, node names) printed to a terminal cannot
/// move the cursor, set the title, clear the screen, reorder what follows it or hide in
/// a word.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| is_unseen(c) && c != '\n' && c != '\t';
    if !s.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(s);
    }
    // Sized at once: a report's whole text passes through here.
    let len = s.chars().map(|c| if escaped(c) { c.escape_default().count() } else { c.len_utf8() }).sum();
    let mut out = String::with_capacity(len);
    for c in s.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A writer that only counts the bytes written to it: a document's length before it is
/// written, or for what a report will hold.
pub(crate) struct ByteCount(pub(crate) usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The most bytes `s` takes as a report writes it, a table or JSON: a character
/// [`escape_controls`] escapes is up to eight (`\u{202e}`; JSON's `\u202e` is six), a
/// quote or backslash two in JSON, any other its UTF-8 bytes.
pub fn written_len(s: &str) -> usize {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\t' => 2,
            c if is_unseen(c) => 8,
            c => c.len_utf8(),
        })
        .sum()
}

/// `json` (serialised JSON) with every character [`escape_controls`] would escape written
/// as JSON's own `\uXXXX`. serde_json escapes only the controls below U+0020, so a name
/// holding U+202E, U+2028, U+0085 or DEL reached standard output raw, where
/// `escape_controls` turned it into Rust's `\u{202e}`, which no JSON reader reads. Such a
/// character can stand only inside a string (JSON's whitespace is space, tab, line feed
/// and carriage return, and serde_json writes no carriage return), so the escape keeps
/// the document's values; every such character is in the Basic Multilingual Plane, one
/// `\uXXXX` each.
pub fn escape_json_unseen(json: String) -> String {
    let escaped = |c: char| is_unseen(c) && c != '\n' && c != '\t';
    if !json.chars().any(escaped) {
        return json;
    }
    // Sized at once: grown by doubling, the copy took up to twice the report's length.
    let len = json.chars().map(|c| if escaped(c) { 6 * c.len_utf16() } else { c.len_utf8() }).sum();
    let mut out = String::with_capacity(len);
    for c in json.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("1us"), Ok(1e-6));
        assert_eq!(parse_time("1 us"), Ok(1e-6));
        assert_eq!(parse_time("1\u{b5}s"), Ok(1e-6));
        assert_eq!(parse_time("1\u{3bc}s"), Ok(1e-6));
        assert_eq!(parse_time("0.5ns"), Ok(5e-10));
        assert_eq!(parse_time("0.05ns"), Ok(5e-11));
        assert_eq!(parse_time("0.7us"), Ok(7e-7));
        assert_eq!(parse_time("2ms"), Ok(2e-3));
        assert_eq!(parse_time("3s"), Ok(3.0));
        assert_eq!(parse_time("250 ps"), Ok(2.5e-10));
        assert_eq!(parse_time("1e-6"), Ok(1e-6));
        assert_eq!(parse_time("1e3ns"), Ok(1e-6));
        assert_eq!(parse_time("1E-3s"), Ok(1e-3));
        assert_eq!(parse_time(".5ms"), Ok(5e-4));
        assert_eq!(parse_time("0"), Ok(0.0));
        assert_eq!(parse_time("-0"), Ok(0.0));
        assert_eq!(parse_time(" 2 ms "), Ok(2e-3));
    }

    #[test]
    fn time_errors() {
        let e = parse_time("1xs").unwrap_err();
        assert!(e.contains("unknown time unit 'xs' in '1xs'"), "{e}");
        assert!(e.contains("allowed: s, ms, us"), "{e}");
        assert!(parse_time("-1us").unwrap_err().contains("negative"));
        assert!(parse_time("").unwrap_err().contains("empty"));
        assert!(parse_time("us").unwrap_err().contains("not a time"));
        assert!(parse_time("inf").unwrap_err().contains("not a time"));
        assert!(parse_time("1e999").unwrap_err().contains("finite"));
        assert!(parse_time("1 u s").unwrap_err().contains("unknown time unit"));
        assert!(parse_time("1e").unwrap_err().contains("unknown time unit 'e'"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4 KiB"), Ok(4096));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1TiB"), Ok(1 << 40));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("1KB"), Ok(1000));
        assert_eq!(parse_size("1kB"), Ok(1000));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("1TB"), Ok(1_000_000_000_000));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("1B"), Ok(1));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("0B"), Ok(0));
        assert_eq!(parse_size("2.5MiB"), Ok(2_621_440));
        assert_eq!(parse_size("0.5KiB"), Ok(512));
        assert_eq!(parse_size("1.5KB"), Ok(1500));
        assert_eq!(parse_size("1e6"), Ok(1_000_000));
        assert_eq!(parse_size("4096.0"), Ok(4096));
        assert_eq!(parse_size("0.001KB"), Ok(1));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn fine_times_keep_six_digits_in_the_reports_units() {
        assert_eq!(fmt_time_fine(0.0), "0 s");
        assert_eq!(fmt_time_fine(1.1024e-6), "1.1024 us");
        assert_eq!(fmt_time_fine(2.1638399999999998e-6), "2.16384 us");
        assert_eq!(fmt_time_fine(999.99999e-9), "1 us");
        assert_eq!(fmt_time_fine(0.5), "500 ms");
        assert_eq!(fmt_time_fine(123456.0), "123456 s");
        assert_eq!(fmt_time_fine(1e300), fmt_time(1e300));
    }

    #[test]
    fn size_errors() {
        assert_eq!(
            parse_size("4KiBs").unwrap_err(),
            "unknown size unit 'KiBs' in '4KiBs'; allowed: B, KB, MB, GB, TB, PB, EB, KiB, MiB, GiB, \
             TiB, PiB, EiB, or a plain number of bytes"
        );
        assert_eq!(parse_size("1PiB"), Ok(1 << 50));
        assert_eq!(parse_size("15EiB"), Ok(15 << 60));
        assert_eq!(parse_size("2PB"), Ok(2_000_000_000_000_000));
        assert!(parse_size("16EiB").unwrap_err().contains("too large (at most 18446744073709551615 bytes)"));
        assert!(parse_size("19EB").unwrap_err().contains("too large"));
        assert!(parse_size("1.5").unwrap_err().contains("not a whole number of bytes"));
        assert!(parse_size("0.3KiB").unwrap_err().contains("not a whole number of bytes"));
        assert!(parse_size("-4KiB").unwrap_err().contains("negative"));
        assert!(parse_size("18446744073709551616").unwrap_err().contains("too large"));
        assert!(parse_size("1e30").unwrap_err().contains("too large"));
        assert!(parse_size("1e99999").unwrap_err().contains("too large"));
        assert!(parse_size("KiB").unwrap_err().contains("not a size"));
        assert!(parse_size("4kib").unwrap_err().contains("unknown size unit 'kib'"));
        assert!(parse_size("").unwrap_err().contains("empty size"));
    }

    #[test]
    fn bandwidths() {
        assert_eq!(parse_bandwidth("100Gbps"), Ok(12.5e9));
        assert_eq!(parse_bandwidth("100 Gbps"), Ok(12.5e9));
        assert_eq!(parse_bandwidth("25Gb/s"), Ok(3.125e9));
        assert_eq!(parse_bandwidth("200Gbit/s"), Ok(25e9));
        assert_eq!(parse_bandwidth("12.5GB/s"), Ok(12.5e9));
        assert_eq!(parse_bandwidth("12.5GBps"), Ok(12.5e9));
        assert_eq!(parse_bandwidth("150GB/s"), Ok(150e9));
        assert_eq!(parse_bandwidth("1.5GiB/s"), Ok(1.5 * (1u64 << 30) as f64));
        assert_eq!(parse_bandwidth("12.5e9"), Ok(12.5e9));
        assert_eq!(parse_bandwidth("800MB/s"), Ok(8e8));
        assert_eq!(parse_bandwidth("1bps"), Ok(0.125));
    }

    #[test]
    fn bandwidth_errors() {
        let e = parse_bandwidth("100Gbs").unwrap_err();
        assert!(e.contains("unknown bandwidth unit 'Gbs' in '100Gbs'"), "{e}");
        assert!(e.contains("allowed: bits per second"), "{e}");
        assert!(parse_bandwidth("0").unwrap_err().contains("greater than 0"));
        assert!(parse_bandwidth("0Gbps").unwrap_err().contains("greater than 0"));
        assert!(parse_bandwidth("-1GB/s").unwrap_err().contains("greater than 0"));
        assert!(parse_bandwidth("1e999").unwrap_err().contains("finite"));
        assert!(parse_bandwidth("fast").unwrap_err().contains("not a bandwidth"));
    }

    #[test]
    fn yaml_numbers() {
        assert_eq!(time_value(&ParamValue::Float(1e-6)), Ok(1e-6));
        assert_eq!(time_value(&ParamValue::Int(2)), Ok(2.0));
        assert_eq!(time_value(&ParamValue::Str("1us".into())), Ok(1e-6));
        assert_eq!(size_value(&ParamValue::Int(4096)), Ok(4096));
        assert_eq!(size_value(&ParamValue::Float(4096.0)), Ok(4096));
        assert!(size_value(&ParamValue::Float(1.5)).is_err());
        assert_eq!(size_value(&ParamValue::Float(1e6)), Ok(1_000_000));
        assert_eq!(bandwidth_value(&ParamValue::Float(12.5e9)), Ok(12.5e9));
        assert_eq!(bandwidth_value(&ParamValue::Int(1000)), Ok(1000.0));
        // Every finite f64 survives the trip through its text.
        for v in [5e-11, 1.234_567_890_123e-7, 3.0e-300, 0.1] {
            assert_eq!(time_value(&ParamValue::Float(v)), Ok(v));
        }
    }

    #[test]
    fn format_time() {
        assert_eq!(fmt_time(0.0), "0 s");
        assert_eq!(fmt_time(1.234e-3), "1.23 ms");
        assert_eq!(fmt_time(4.56e-6), "4.56 us");
        assert_eq!(fmt_time(789e-9), "789 ns");
        assert_eq!(fmt_time(1e-6), "1 us");
        assert_eq!(fmt_time(1.5e-6), "1.5 us");
        assert_eq!(fmt_time(999.7e-9), "1 us");
        assert_eq!(fmt_time(12.345), "12.3 s");
        assert_eq!(fmt_time(5e-11), "50 ps");
        assert_eq!(fmt_time(1.5e-15), "0.0015 ps");
        assert_eq!(fmt_time(4000.0), "4000 s");
        assert_eq!(fmt_time(-2e-3), "-2 ms");
        assert_eq!(fmt_time(f64::NAN), "NaN");
    }

    #[test]
    fn format_bytes() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(100), "100 B");
        assert_eq!(fmt_bytes(1000), "1000 B");
        assert_eq!(fmt_bytes(4096), "4 KiB");
        assert_eq!(fmt_bytes(1 << 20), "1 MiB");
        assert_eq!(fmt_bytes(3 << 19), "1.5 MiB");
        assert_eq!(fmt_bytes(64 << 20), "64 MiB");
        assert_eq!(fmt_bytes(1_000_000), "977 KiB");
        assert_eq!(fmt_bytes(u64::MAX), "16 EiB");
    }

    #[test]
    fn format_bandwidth() {
        assert_eq!(fmt_bandwidth(11.6e9), "11.6 GB/s");
        assert_eq!(fmt_bandwidth(12.5e9), "12.5 GB/s");
        assert_eq!(fmt_bandwidth(8e8), "800 MB/s");
        assert_eq!(fmt_bandwidth(0.0), "0 B/s");
        assert_eq!(fmt_bandwidth(1.2345e13), "12.3 TB/s");
    }

    #[test]
    fn magnitudes_beyond_the_units_are_scientific() {
        assert_eq!(fmt_time(6.144e303), "6.14e303 s");
        assert_eq!(fmt_time(2213609288.8), "2.21e9 s");
        assert_eq!(fmt_time(999_999.0), "999999 s");
        assert_eq!(fmt_time(1e-20), "1e-8 ps");
        assert_eq!(fmt_bandwidth(1e-300), "1e-300 B/s");
        assert_eq!(fmt_bandwidth(5e-324), "4.94e-324 B/s");
        assert_eq!(fmt_time(0.5e-12), "0.5 ps");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_controls("a\u{1b}]0;x\u{7}b\tc\nd\re"), "a\\u{1b}]0;x\\u{7}b\tc\nd\\re");
        assert!(matches!(escape_controls("plain ✓"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("\u{202e}ring si\u{200b}zes a\u{2028}b"),
            "\\u{202e}ring si\\u{200b}zes a\\u{2028}b"
        );
        assert!(matches!(escape_controls("né 名前 עברית"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn format_size_short() {
        assert_eq!(fmt_size_short(0), "0B");
        assert_eq!(fmt_size_short(6), "6B");
        assert_eq!(fmt_size_short(1000), "1000B");
        assert_eq!(fmt_size_short(4096), "4KiB");
        assert_eq!(fmt_size_short(1536), "1.5KiB");
        assert_eq!(fmt_size_short(256 << 10), "256KiB");
        assert_eq!(fmt_size_short(64 << 20), "64MiB");
        assert_eq!(fmt_size_short(1 << 40), "1TiB");
        assert_eq!(fmt_size_short(4097), "4097B");
        for n in [0, 1, 7, 1000, 1024, 1536, 4097, 1 << 20, (1 << 20) + 512, 3 << 30, u64::MAX] {
            assert_eq!(parse_size(&fmt_size_short(n)), Ok(n), "{n}");
        }
    }
}
