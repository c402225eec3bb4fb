//! The files a command reads and writes, checked before any work is done.
//!
//! A run can take minutes; finding only at its end that the report cannot be written, or
//! that it was written over the scenario it came from, loses that work. So every command
//! first [`plan`]s its outputs: each must be writable, none may be one of the inputs or
//! another output (whatever path names it: `./x` and `x`, a symbolic or a hard link),
//! and a directory for plots must be creatable. Outputs are then written to a temporary
//! file beside the target and renamed over it ([`Output::write`]), so an interrupted or
//! failed write leaves the old file whole. Inputs must be regular files ([`read_input`]):
//! a FIFO or a device would block or never end.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why an input named `-` that does not exist cannot be read: `--output -` is standard
/// output, so a user may take `-` for standard input where a file is read.
pub(crate) const DASH_IS_NO_INPUT: &str =
    "`-` is not read as standard input (no input is); give a file name (`./-` for a file named -)";

/// Refuse `path` as an input unless it is a regular file. Looks at the metadata only
/// (following symbolic links), so a FIFO is refused without opening it.
pub fn check_input(path: &Path) -> Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| {
        if path.as_os_str() == "-" && e.kind() == io::ErrorKind::NotFound {
            format!("cannot read -: {DASH_IS_NO_INPUT}")
        } else {
            format!("cannot read {}: {e}", path.display())
        }
    })?;
    if meta.is_dir() {
        return Err(format!("cannot read {}: it is a directory", path.display()));
    }
    if !meta.is_file() {
        return Err(format!(
            "cannot read {}: it is not a regular file ({}); give a file (copy a pipe's or device's contents into one first)",
            path.display(),
            kind(&meta)
        ));
    }
    Ok(())
}

/// The text of the input file `path`, refused unless it is a regular file: a leading
/// byte-order mark dropped, and a file that is not UTF-8 refused at its first bad byte
/// ([`utf8_text`]).
pub fn read_input(path: &Path) -> Result<String, String> {
    check_input(path)?;
    let bytes = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    utf8_text(bytes).map_err(|e| format!("{}:{e}", path.display()))
}

/// `bytes` as text without a leading UTF-8 byte-order mark (editors on Windows and
/// PowerShell's `Out-File` write one; JSON and YAML readers take it as a stray
/// character), or, when they are not UTF-8, where the first bad byte is.
pub fn utf8_text(mut bytes: Vec<u8>) -> Result<String, NotUtf8> {
    if bytes.starts_with(&[0xef, 0xbb, 0xbf]) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        // Everything before `at` is valid UTF-8.
        let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        NotUtf8 {
            line: before.matches('\n').count() as u64 + 1,
            column: before.rsplit('\n').next().unwrap_or_default().chars().count() as u64 + 1,
            byte: bytes.get(at).copied().unwrap_or_default(),
        }
    })
}

/// The first byte of a file that is not UTF-8: its line and column (1-based, the column
/// in characters, as the other messages count it) and its value. Displays as
/// `LINE:COLUMN: not UTF-8 text (byte 0xFF); ...`, to follow a file name and a colon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotUtf8 {
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1, in characters.
    pub column: u64,
    /// The byte.
    pub byte: u8,
}

impl NotUtf8 {
    /// What is wrong and what is allowed, without the place.
    pub fn message(&self) -> String {
        format!("not UTF-8 text (byte 0x{:02X}); save the file as UTF-8", self.byte)
    }
}

impl std::fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message())
    }
}

/// The most values (numbers, strings, lists, objects...) a JSON report may hold: a
/// report of thousands of points holds well under a million; each value read costs 30
/// to 170 bytes of memory (more in objects), so this bounds a hostile file's cost to
/// several hundred MiB.
pub const MAX_JSON_VALUES: u64 = 4_000_000;

/// Walk the JSON `text` without keeping it: refuse an object that gives one key twice
/// (a reader would silently take one of them) and a document of more than
/// [`MAX_JSON_VALUES`] values, before anything builds it in memory. The error carries
/// serde_json's line and column.
pub fn check_json(text: &str) -> Result<(), serde_json::Error> {
    use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::cell::Cell;
    use std::fmt;

    struct Walk<'a>(&'a Cell<u64>);
    impl<'de> de::DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl Walk<'_> {
        fn count<E: de::Error>(&self) -> Result<(), E> {
            self.0.set(self.0.get() + 1);
            if self.0.get() > MAX_JSON_VALUES {
                return Err(E::custom(format!(
                    "more than {MAX_JSON_VALUES} values, far more than a report holds; is it a report?"
                )));
            }
            Ok(())
        }
    }
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            self.count()
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            self.count()
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            self.count()
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            self.count()
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            self.count()
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            self.count()
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            self.count()?;
            while a.next_element_seed(Walk(self.0))?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            self.count()?;
            let mut keys = std::collections::BTreeSet::new();
            while let Some(key) = a.next_key::<String>()? {
                if !keys.insert(key.clone()) {
                    return Err(de::Error::custom(format!(
                        "the key \"{key}\" is given twice in one object; each key may appear only once"
                    )));
                }
                a.next_value_seed(Walk(self.0))?;
            }
            Ok(())
        }
    }
    let seen = Cell::new(0);
    let mut de = serde_json::Deserializer::from_str(text);
    de::DeserializeSeed::deserialize(Walk(&seen), &mut de)?;
    de.end()?;
    Ok(())
}

/// What kind of non-regular file `meta` describes, for messages.
pub(crate) fn kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// One file a command will write, checked by [`plan`].
#[derive(Clone, Debug)]
pub struct Output {
    /// The path as given, for messages.
    pub path: PathBuf,
    /// The flag that named it (`--output`), so a write that fails says which output.
    flag: String,
    /// Where the bytes go: `path` with symbolic links resolved when it exists, so
    /// replacing it keeps the link and updates the file it points to.
    target: PathBuf,
    /// Write straight into `target` (a device or a FIFO: `/dev/null`, `/dev/stdout`),
    /// which a rename would replace rather than write to.
    direct: bool,
    /// A FIFO's write end, opened when checked (which proved a reader was there) and held
    /// until the output is dropped, so the reader does not see the end of the data before
    /// the report is written.
    _held: Option<std::sync::Arc<fs::File>>,
}

impl Output {
    /// Write the file: `fill` writes the whole content into the path it is given (a
    /// temporary file beside the target, with the same extension), which then replaces
    /// the target in one rename. On failure the target is untouched and the temporary
    /// file removed.
    pub fn write(&self, fill: impl FnOnce(&Path) -> Result<(), String>) -> Result<(), String> {
        // A device that fails (`/dev/full`) is found only now; say which flag named it.
        let flagged = |e: String| format!("{}: {e}", self.flag);
        if self.direct {
            return fill(&self.target).map_err(flagged);
        }
        replace_through_temp(&self.target, &self.path, fill).map_err(flagged)
    }

    /// [`Output::write`] of `text`.
    pub fn write_text(&self, text: &str) -> Result<(), String> {
        self.write(|p| fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", self.path.display())))
    }
}

/// Write `target` by `fill`ing a temporary file beside it (`.NAME.tmpPID.EXT`) and
/// renaming it over `target` once whole: an old file is replaced at once or kept whole,
/// whatever stops the write (a full disk, `ulimit -f`, Ctrl-C). `shown` is the name
/// messages give. The temporary file is removed where the write fails.
pub fn replace_through_temp(
    target: &Path,
    shown: &Path,
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let tmp = temp_beside(target);
    // Removed by a signal that ends the process meanwhile (crate::process).
    let held = crate::process::hold_temp(&tmp);
    let done = fill(&tmp)
        .and_then(|()| fs::rename(&tmp, target).map_err(|e| format!("cannot write {}: {e}", shown.display())));
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    drop(held);
    done
}

/// `.NAME.tmpPID.EXT` in the directory of `target`: hidden, unique to this process, and
/// with the target's extension (the chart writers choose PNG or SVG by it).
///
/// The name is cut to fit the file system's 255 bytes: a target of 241 to 255 bytes was
/// refused as `File name too long` though its own name was legal.
fn temp_beside(target: &Path) -> PathBuf {
    const NAME_MAX: usize = 255;
    let name = target.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    // Only the chart writers read the extension (`png`, `svg`); a long one is dropped.
    let ext = target.extension().map(|e| format!(".{}", e.to_string_lossy())).filter(|e| e.len() <= 16);
    let tail = format!(".tmp{}{}", std::process::id(), ext.unwrap_or_default());
    let mut cut = name.len().min(NAME_MAX - 1 - tail.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    target.with_file_name(format!(".{}{tail}", &name[..cut]))
}

/// What a command will write: files by flag, and directories of plots.
#[derive(Clone, Debug, Default)]
pub struct Plan<'a> {
    /// The files it reads.
    pub inputs: Vec<&'a Path>,
    /// The files it writes, each with its flag (`--output`) for messages.
    pub files: Vec<(&'a str, &'a Path)>,
    /// The directories it writes plots into, with the flag and the prefix of every
    /// file name it writes there (`<slug>_`).
    pub dirs: Vec<(&'a str, &'a Path, String)>,
}

/// Who a path is, to find two names of one file: the device and inode of an existing
/// file, else its resolved directory and name.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Inode(u64, u64),
    Path(PathBuf),
}

/// The key of `path`: `Ok(None)` when its directory does not exist either.
fn key(path: &Path) -> Option<Key> {
    if let Ok(m) = fs::metadata(path) {
        return Some(Key::Inode(m.dev(), m.ino()));
    }
    let name = path.file_name()?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::canonicalize(parent).ok().map(|dir| Key::Path(dir.join(name)))
}

/// Check every output of `plan` before anything runs, and return the files' [`Output`]s
/// in the order given. Refused: an output that is a directory, whose directory does not
/// exist or cannot be written, that is a symbolic link to nothing, that is a read-only
/// file, that names an input or the same file as another output, or a plot directory
/// that cannot be created.
pub fn plan(plan: &Plan<'_>) -> Result<Vec<Output>, String> {
    // Every file seen so far: its key, and `None` for an input or the flag that writes it.
    let mut seen: Vec<(Key, Option<&str>, &Path)> = Vec::new();
    for &p in &plan.inputs {
        if let Some(k) = key(p) {
            seen.push((k, None, p));
        }
    }
    let clash = |flag: &str, path: &Path, other: Option<&str>, with: &Path| match other {
        None => format!(
            "{flag} {} is the input {}: writing it would destroy the input; give {flag} a file of its own",
            path.display(),
            with.display()
        ),
        Some(o) => format!(
            "{flag} {} and {o} {} name the same file, and one would overwrite the other; give each its own",
            path.display(),
            with.display()
        ),
    };
    let mut outputs = Vec::new();
    for &(flag, path) in &plan.files {
        let out = check_file(flag, path)?;
        let k = key(path).ok_or_else(|| format!("{flag} {}: cannot resolve its directory", path.display()))?;
        if let Some((_, other, with)) = seen.iter().find(|(s, _, _)| *s == k) {
            return Err(clash(flag, path, *other, with));
        }
        seen.push((k, Some(flag), path));
        outputs.push(out);
    }
    for (flag, dir, prefix) in &plan.dirs {
        check_dir(flag, dir)?;
        if let Some(k) = key(dir)
            && let Some((_, other, with)) = seen.iter().find(|(s, _, _)| *s == k)
        {
            return Err(clash(flag, dir, *other, with));
        }
        // A file already named there like the plots would be drawn over.
        for &(_, _, p) in &seen {
            let in_dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let drawn = name.starts_with(prefix.as_str()) && (name.ends_with(".svg") || name.ends_with(".png"));
            if drawn && fs::canonicalize(in_dir).ok().is_some_and(|d| fs::canonicalize(dir).ok() == Some(d)) {
                return Err(format!(
                    "{flag} {} may draw over {} (the plots there are named {prefix}*.svg and .png); \
                     choose another directory",
                    dir.display(),
                    p.display()
                ));
            }
        }
    }
    Ok(outputs)
}

/// `open(2)`'s flag to return at once instead of waiting (for a FIFO's reader).
#[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
const O_NONBLOCK: i32 = 0x0004;
#[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
const O_NONBLOCK: i32 = 0o4000;
/// `open(2)`'s error for a FIFO opened for writing, without waiting, that no process reads.
const ENXIO: i32 = 6;

/// The refusal of `-` as an output: it is not a file's name but standard output, where
/// only a report can go (`run`, `merge` and `tune` read `--output -` as no `--output`).
fn dash(flag: &str, what: &str) -> String {
    format!(
        "{flag} -: `-` is standard output, which only run, merge and tune's --output can write (the same as \
         leaving --output out); give a {what} name (`./-` for one named -)"
    )
}

/// One output file: it or its directory must be writable.
fn check_file(flag: &str, path: &Path) -> Result<Output, String> {
    let at = |why: String| format!("{flag} {}: {why}", path.display());
    let output = |target: PathBuf, direct: bool, _held| Output {
        path: path.to_path_buf(),
        flag: flag.to_string(),
        target,
        direct,
        _held,
    };
    if path.as_os_str().is_empty() {
        return Err(format!("{flag}: the file name is empty"));
    }
    if path.as_os_str() == "-" {
        return Err(dash(flag, "file"));
    }
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(at("it is a directory; give a file name".to_string())),
        Ok(m) if m.is_file() => {
            fs::OpenOptions::new().append(true).open(path).map_err(|e| at(format!("cannot write it: {e}")))?;
            let target = fs::canonicalize(path).map_err(|e| at(e.to_string()))?;
            probe_dir(flag, path, &target)?;
            Ok(output(target, false, None))
        }
        Ok(m) if std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()) => {
            // Opening a FIFO for writing waits, without end and without a word, for a
            // reader; open it without waiting and refuse it when no one reads.
            use std::os::unix::fs::OpenOptionsExt;
            let held = fs::OpenOptions::new().write(true).custom_flags(O_NONBLOCK).open(path).map_err(|e| {
                if e.raw_os_error() == Some(ENXIO) {
                    at("it is a FIFO that no process reads, and writing it would wait for ever; start \
                        its reader first, or give a file"
                        .to_string())
                } else {
                    at(format!("cannot write it: {e}"))
                }
            })?;
            let held = Some(std::sync::Arc::new(held));
            Ok(output(path.to_path_buf(), true, held))
        }
        // A socket cannot be opened as a file: found only when the report was written.
        Ok(m) if std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()) => {
            Err(at("it is a socket, which cannot be written as a file; give a file".to_string()))
        }
        Ok(_) => Ok(output(path.to_path_buf(), true, None)),
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
            if fs::symlink_metadata(path).is_ok() {
                return Err(at("it is a symbolic link to a file that does not exist".to_string()));
            }
            // `x/` names a directory even where `Path` drops the slash.
            use std::os::unix::ffi::OsStrExt;
            if path.file_name().is_none() || path.as_os_str().as_bytes().ends_with(b"/") {
                return Err(at("it names a directory; give a file name".to_string()));
            }
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            match fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(at(format!("{} is not a directory", dir.display()))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(at(format!("the directory {} does not exist; create it first", dir.display())));
                }
                Err(e) => return Err(at(format!("cannot use the directory {}: {e}", dir.display()))),
            }
            probe_dir(flag, path, path)?;
            Ok(output(path.to_path_buf(), false, None))
        }
        Err(e) => Err(at(e.to_string())),
    }
}

/// Create and remove the temporary file [`Output::write`] will use beside `target`: the
/// directory must let us.
fn probe_dir(flag: &str, path: &Path, target: &Path) -> Result<(), String> {
    probe(&temp_beside(target)).map_err(|e| format!("{flag} {}: cannot write in its directory: {e}", path.display()))
}

/// Create the file `tmp`, which must not exist, and remove it.
fn probe(tmp: &Path) -> io::Result<()> {
    // Removed by a signal that ends the process meanwhile, as a written file's is.
    let held = crate::process::hold_temp(tmp);
    let made = fs::OpenOptions::new().write(true).create_new(true).open(tmp);
    if made.is_ok() {
        let _ = fs::remove_file(tmp);
    }
    drop(held);
    made.map(drop)
}

/// The system directory `dir` is, or lies under, where no plot belongs: `/dev` itself
/// (its subdirectories such as `/dev/shm` are ordinary places to write), `/proc` and
/// `/sys` anywhere. Root may create files in `/dev` (and some of `/sys`), so the probe
/// of [`check_dir`] let plots be written among the devices.
fn system_dir(dir: &Path) -> Option<&'static str> {
    let real = fs::canonicalize(dir).ok()?;
    if real == Path::new("/dev") {
        return Some("/dev");
    }
    ["/proc", "/sys"].into_iter().find(|s| real.starts_with(s))
}

/// A directory of plots: it, or the nearest of its ancestors that exists, must be a
/// directory we can write in (it is created when the plots are drawn).
fn check_dir(flag: &str, dir: &Path) -> Result<(), String> {
    if dir.as_os_str().is_empty() {
        return Err(format!("{flag}: the directory name is empty"));
    }
    if dir.as_os_str() == "-" {
        return Err(dash(flag, "directory"));
    }
    let mut at = dir;
    loop {
        match fs::metadata(at) {
            // The plots are drawn after the run: a directory they cannot be written in
            // (read-only, or /proc's) is refused now, not once the work is done.
            Ok(m) if m.is_dir() => {
                probe(&temp_beside(&at.join("plots")))
                    .map_err(|e| format!("{flag} {}: cannot write in {}: {e}", dir.display(), at.display()))?;
                return match system_dir(at) {
                    Some(system) => Err(format!(
                        "{flag} {}: plots are not written into {system}, the system's devices and kernel \
                         files; name a directory of your own (a new one is made)",
                        dir.display()
                    )),
                    None => Ok(()),
                };
            }
            Ok(_) => {
                return Err(format!(
                    "{flag} {}: {} exists and is not a directory",
                    dir.display(),
                    if at == dir { "it".to_string() } else { at.display().to_string() }
                ));
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                // A link to nowhere passes for a missing directory, but it cannot be
                // created as one: refused now, not after the run.
                if fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(format!(
                        "{flag} {}: {} is a symbolic link to a directory that does not exist",
                        dir.display(),
                        if at == dir { "it".to_string() } else { at.display().to_string() }
                    ));
                }
                match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => at = p,
                    // A relative name's first part is made in the working directory,
                    // which must be writable too.
                    Some(_) if at.is_relative() => at = Path::new("."),
                    _ => return Ok(()),
                }
            }
            Err(e) => return Err(format!("{flag} {}: cannot use {}: {e}", dir.display(), at.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_file_keeps_the_extension() {
        let t = temp_beside(Path::new("out/g.png"));
        assert_eq!(t.extension().unwrap(), "png");
        assert_eq!(t.parent().unwrap(), Path::new("out"));
        assert!(t.file_name().unwrap().to_string_lossy().starts_with(".g.png.tmp"));
    }

    /// A legal name of 255 bytes (multi-byte letters too) gets a temporary name within
    /// 255 bytes, still with its extension.
    #[test]
    fn the_temporary_name_of_a_long_name_fits() {
        for stem in ["a".repeat(251), "é".repeat(125), "b".repeat(100)] {
            let t = temp_beside(&Path::new("d").join(format!("{stem}.png")));
            let name = t.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.len() <= 255, "{}", name.len());
            assert!(name.starts_with('.') && name.ends_with(".png"), "{name}");
        }
    }
}
