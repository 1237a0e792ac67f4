//! A Matrix Market file's bytes in memory, read without trusting the file.
//!
//! What a hostile or mistaken file can do, and what stops it here:
//! - a FIFO blocks for ever and a device (`/dev/zero`) never ends: anything that is not a
//!   regular file is refused unless [`ReadLimits::allow_special_files`] is set;
//! - a large file that is no Matrix Market file at all: the banner is checked on the first
//!   bytes, before the rest is read;
//! - a file larger than the memory there is: refused from its size before it is read;
//! - a gzip bomb, or an endless stream: a stream is read in chunks, its header (banner,
//!   comments, size line) at most [`HEADER_MAX`] bytes and its body at most what the declared
//!   entries can take ([`body_allowance`]).
//!
//! What the matrix itself will cost is checked from the header in `mm.rs` (`check_cost`).

use super::mm::{MmError, MmErrorKind};
use super::mm_header;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Limits on what reading one matrix or vector file may cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Bytes reading may hold at once: the file, its entries and the matrix built from them.
    /// `None`: no limit. The default is the memory available when the limits are made
    /// ([`available_memory`]).
    pub memory_budget: Option<u64>,
    /// Read FIFOs, character devices and other files that are not regular files (bounded like
    /// a gzip stream). Off by default: such a read can block for ever or never end.
    pub allow_special_files: bool,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            memory_budget: available_memory(),
            allow_special_files: false,
        }
    }
}

impl ReadLimits {
    /// No memory limit, special files allowed: for data the caller already trusts.
    pub fn unlimited() -> Self {
        ReadLimits {
            memory_budget: None,
            allow_special_files: true,
        }
    }

    pub(super) fn budget(&self) -> u64 {
        self.memory_budget.unwrap_or(u64::MAX)
    }
}

/// Bytes of memory this process can still take without being killed: the smaller of the
/// kernel's `MemAvailable` and what the cgroup (container) limit leaves. `None` where neither
/// is known (not Linux).
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kb.checked_mul(1024)
        });
    let read_u64 =
        |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    // cgroup v2; "max" (no limit) does not parse and leaves only MemAvailable.
    let cgroup = read_u64("/sys/fs/cgroup/memory.max")
        .map(|max| max.saturating_sub(read_u64("/sys/fs/cgroup/memory.current").unwrap_or(0)));
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The header of a stream must end within this many bytes.
pub(super) const HEADER_MAX: u64 = 64 << 20;
/// The banner must start within this many bytes (blank lines before it are allowed).
const BANNER_WITHIN: usize = 64 << 10;
const CHUNK: usize = 1 << 20;
const BANNER_WORD: &[u8] = b"%%MatrixMarket";

/// Body bytes a stream may hold for `entries` declared entry lines: 256 bytes a line on
/// average (an entry with two 10-digit indices and a 17-digit value takes under 60) plus 16 MiB
/// for comment lines. Past it, decompression stops.
pub(super) fn body_allowance(entries: usize) -> u64 {
    (entries as u64)
        .saturating_mul(256)
        .saturating_add(16 << 20)
}

/// A human-readable byte count for messages: `4.8 GB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn err(kind: MmErrorKind, line: usize, message: impl Into<String>) -> MmError {
    MmError::new(kind, line, message)
}

/// The whole file in memory, after the checks above. `.gz` names are decompressed.
pub(super) fn read_source(path: &Path, limits: &ReadLimits) -> Result<Vec<u8>, MmError> {
    let meta = std::fs::metadata(path).map_err(|e| err(MmErrorKind::Io, 0, e.to_string()))?;
    let regular = meta.is_file();
    if !regular && !limits.allow_special_files {
        return Err(err(
            MmErrorKind::NotAFile,
            0,
            format!(
                "{}, not a regular file: refused, since reading it could block or never end \
                 (--allow-special-files reads it anyway)",
                file_type_name(&meta)
            ),
        ));
    }
    if meta.is_dir() {
        return Err(err(MmErrorKind::NotAFile, 0, "a directory, not a file"));
    }
    let file = File::open(path).map_err(|e| err(MmErrorKind::Io, 0, e.to_string()))?;
    if path.extension().is_some_and(|ext| ext == "gz") {
        // Multi-member: concatenated gzip streams (as `cat a.gz b.gz`) are one valid file.
        return read_stream(flate2::read::MultiGzDecoder::new(file), limits);
    }
    if !regular {
        return read_stream(file, limits);
    }
    read_regular(file, meta.len(), limits)
}

fn file_type_name(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// A regular file: the banner from its first bytes, its size against the budget, then all of it.
fn read_regular(file: File, size: u64, limits: &ReadLimits) -> Result<Vec<u8>, MmError> {
    let mut head = Vec::with_capacity(BANNER_WITHIN);
    (&file)
        .take(BANNER_WITHIN as u64)
        .read_to_end(&mut head)
        .map_err(|e| read_error(&head, e))?;
    check_banner_start(&head, head.len() < BANNER_WITHIN)?;
    if size > limits.budget() {
        return Err(err(
            MmErrorKind::TooLarge,
            1,
            format!(
                "the file is {}, more than the {} of memory available to read it",
                format_bytes(size),
                format_bytes(limits.budget())
            ),
        ));
    }
    if let Some(data) = read_parallel(&file, size) {
        return Ok(data);
    }
    // The head came from offset 0 of this handle; the rest follows it.
    let mut data = head;
    data.reserve(
        usize::try_from(size)
            .unwrap_or(0)
            .saturating_sub(data.len())
            + 1,
    );
    match (&file).read_to_end(&mut data) {
        Ok(_) => Ok(data),
        Err(e) => Err(read_error(&data, e)),
    }
}

/// The first non-blank bytes must be `%%MatrixMarket`: otherwise the header parser's own
/// error (bad banner, with its line) is returned before the file is read any further.
/// `complete` says `head` is the whole file.
fn check_banner_start(head: &[u8], complete: bool) -> Result<(), MmError> {
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let word = start.map(|s| &body[s..body.len().min(s + BANNER_WORD.len())]);
    match word {
        Some(w) if w.len() == BANNER_WORD.len() && w.eq_ignore_ascii_case(BANNER_WORD) => Ok(()),
        // Cut by the head's end: the header parser sees the rest.
        Some(w)
            if w.len() < BANNER_WORD.len()
                && !complete
                && w.eq_ignore_ascii_case(&BANNER_WORD[..w.len()]) =>
        {
            Ok(())
        }
        None if !complete => Err(err(
            MmErrorKind::BadBanner,
            mm_header::eof_line(head),
            format!(
                "no Matrix Market banner in the first {} bytes, which are all blank",
                head.len()
            ),
        )),
        _ => Err(match mm_header::parse_header(head) {
            Err(e) => e,
            // Unreachable (the banner word is wrong), kept total for safety.
            Ok(_) => err(MmErrorKind::BadBanner, 1, "missing `%%MatrixMarket` banner"),
        }),
    }
}

/// Large files are read by all rayon threads at once, each into its own slice: the kernel's
/// copy and the page faults of the fresh buffer are most of a read's time. `None` (read again
/// sequentially) for small files, other platforms, or any surprise (the file changed).
#[cfg(unix)]
fn read_parallel(file: &File, size: u64) -> Option<Vec<u8>> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    const PIECE: usize = 8 << 20;
    let size = usize::try_from(size).ok()?;
    if size < 4 * PIECE || rayon::current_num_threads() < 2 {
        return None;
    }
    // Zeroed memory comes from fresh pages: the threads' writes are the first touch.
    let mut data = vec![0u8; size];
    data.par_chunks_mut(PIECE)
        .enumerate()
        .try_for_each(|(k, chunk)| file.read_exact_at(chunk, (k * PIECE) as u64))
        .ok()?;
    // A file that grew since its size was taken is read sequentially.
    let mut probe = [0u8; 1];
    (file.read_at(&mut probe, size as u64).ok()? == 0).then_some(data)
}

#[cfg(not(unix))]
fn read_parallel(_file: &File, _size: u64) -> Option<Vec<u8>> {
    None
}

/// A stream of unknown length (gzip, a FIFO, stdin): read in chunks, the banner checked on the
/// first, then bounded by [`HEADER_MAX`] until the size line is known and by the declared
/// entries' [`body_allowance`] after it (and always by the memory budget).
pub(super) fn read_stream<R: Read>(mut reader: R, limits: &ReadLimits) -> Result<Vec<u8>, MmError> {
    let budget = limits.budget();
    let mut data: Vec<u8> = Vec::new();
    let mut limit = HEADER_MAX.min(budget);
    let mut banner_checked = false;
    let mut header_entries = None;
    loop {
        let start = data.len();
        let room = (limit + 1).saturating_sub(start as u64);
        let want = CHUNK.min(usize::try_from(room).unwrap_or(CHUNK)).max(1);
        data.resize(start + want, 0);
        let n = loop {
            match reader.read(&mut data[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    data.truncate(start);
                    return Err(read_error(&data, e));
                }
            }
        };
        data.truncate(start + n);
        let eof = n == 0;
        if !banner_checked && (eof || data.len() >= BANNER_WITHIN) {
            check_banner_start(&data, eof)?;
            banner_checked = true;
        }
        if header_entries.is_none() {
            // Complete lines only, so that a size line cut by the chunk's end is not misread.
            let upto = if eof {
                data.len()
            } else {
                data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
            };
            match mm_header::parse_header(&data[..upto]) {
                Ok(hdr) => {
                    header_entries = Some(hdr.entries);
                    limit = (hdr.body_start as u64)
                        .saturating_add(body_allowance(hdr.entries))
                        .min(budget);
                }
                Err(e) if eof || !needs_more(&e, &data[..upto]) => return Err(e),
                Err(_) => {}
            }
        }
        if eof {
            return Ok(data);
        }
        if data.len() as u64 > limit {
            return Err(stream_too_long(&data, limit, budget, header_entries));
        }
    }
}

/// A header error on complete lines that more data could still fix: the size line has not come
/// yet, or no line at all is complete.
fn needs_more(e: &MmError, complete_lines: &[u8]) -> bool {
    e.kind == MmErrorKind::MissingSize || complete_lines.iter().all(u8::is_ascii_whitespace)
}

#[cold]
fn stream_too_long(data: &[u8], limit: u64, budget: u64, entries: Option<usize>) -> MmError {
    let line = mm_header::eof_line(data);
    let message = match entries {
        _ if limit == budget => format!(
            "the data goes on past the {} of memory available to read it",
            format_bytes(budget)
        ),
        None => format!(
            "no size line in the first {}: refused (a header is a banner, comments and a size \
             line)",
            format_bytes(HEADER_MAX)
        ),
        Some(n) => format!(
            "the data goes on past {}, more than {n} declared entries can take (256 bytes a \
             line plus 16 MiB of comments): refused as a decompression bomb or a runaway stream",
            format_bytes(limit)
        ),
    };
    err(MmErrorKind::TooLarge, line, message)
}

/// A read that failed part way (a truncated `.gz`): the line being read when it failed, or 0
/// when nothing could be read.
pub(super) fn read_error(partial: &[u8], e: std::io::Error) -> MmError {
    let line = if partial.is_empty() {
        0
    } else {
        mm_header::eof_line(partial)
    };
    err(
        MmErrorKind::Io,
        line,
        format!("read failed after {} bytes: {e}", partial.len()),
    )
}
