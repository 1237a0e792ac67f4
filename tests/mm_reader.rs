//! Matrix Market reader: every error kind with its exact line (fixtures in `matrices/bad/`),
//! tricky valid files (`matrices/tiny/`), the parallel path on large inputs, and a cross-check
//! against nalgebra-sparse on every matrix in `../shared/matrices`.

use precsolve::sparse::{
    CsrMatrix, MmError, MmErrorKind, ReadLimits, Symmetry, parse_matrix_market, read_matrix_market,
    read_matrix_market_with, read_vector, read_vector_with,
};
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};

fn fixture(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices")
        .join(dir)
        .join(name)
}

fn files_in(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    files.sort();
    files
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

/// `(row, col, value)` of every stored entry, row by row.
fn triplets(m: &CsrMatrix) -> Vec<(usize, usize, f64)> {
    (0..m.nrows())
        .flat_map(|i| {
            let (cols, vals) = m.row(i);
            cols.iter()
                .zip(vals)
                .map(move |(&j, &v)| (i, j as usize, v))
        })
        .collect()
}

/// Bitwise comparison, so -0.0 and +0.0 differ and rounding is checked exactly.
fn assert_entries(m: &CsrMatrix, expected: &[(usize, usize, f64)], what: &str) {
    let got = triplets(m);
    let bits = |t: &[(usize, usize, f64)]| -> Vec<(usize, usize, u64)> {
        t.iter().map(|&(i, j, v)| (i, j, v.to_bits())).collect()
    };
    assert_eq!(bits(&got), bits(expected), "{what}: got {got:?}");
}

fn read_tiny(name: &str) -> CsrMatrix {
    read_matrix_market(&fixture("tiny", name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[derive(Clone, Copy, Debug)]
enum Reader {
    Matrix,
    Vector,
    /// A vector that must have this length (a right-hand side for a matrix of these rows).
    VectorOf(usize),
}

fn read_with(reader: Reader, path: &Path) -> Result<(), MmError> {
    match reader {
        Reader::Matrix => read_matrix_market(path).map(drop),
        Reader::Vector => read_vector(path).map(drop),
        Reader::VectorOf(n) => read_vector_with(path, &ReadLimits::default(), Some(n)).map(drop),
    }
}

use MmErrorKind::*;
use Reader::{Matrix, Vector, VectorOf};

/// Every file in `matrices/bad/`: the reader to use, the kind and the line it must report.
const BAD: &[(&str, Reader, MmErrorKind, usize)] = &[
    ("bad_banner.mtx", Matrix, BadBanner, 1),
    ("missing_banner.mtx", Matrix, BadBanner, 1),
    ("banner_no_banner_line.mtx", Matrix, BadBanner, 1),
    ("banner_object.mtx", Matrix, BadBanner, 1),
    ("banner_field.mtx", Matrix, BadBanner, 1),
    ("banner_symmetry.mtx", Matrix, BadBanner, 1),
    ("banner_word_count.mtx", Matrix, BadBanner, 1),
    ("banner_after_blank_lines.mtx", Matrix, BadBanner, 3),
    ("banner_array_pattern.mtx", Matrix, BadBanner, 1),
    ("banner_pattern_skew.mtx", Matrix, BadBanner, 1),
    ("empty_file.mtx", Matrix, BadBanner, 1),
    ("only_blank_lines.mtx", Matrix, BadBanner, 3),
    ("unsupported_complex.mtx", Matrix, Unsupported, 1),
    ("unsupported_hermitian.mtx", Matrix, Unsupported, 1),
    ("missing_size.mtx", Matrix, MissingSize, 4),
    ("missing_size_no_newline.mtx", Matrix, MissingSize, 2),
    ("size_count.mtx", Matrix, BadSize, 3),
    ("size_array_count.mtx", Matrix, BadSize, 4),
    ("size_nonnumeric.mtx", Matrix, BadSize, 2),
    ("size_negative.mtx", Matrix, BadSize, 3),
    ("size_float.mtx", Matrix, BadSize, 2),
    ("size_too_large.mtx", Matrix, BadSize, 3),
    ("size_overflow.mtx", Matrix, BadSize, 2),
    ("not_square_symmetric.mtx", Matrix, NotSquare, 3),
    ("not_square_skew_array.mtx", Matrix, NotSquare, 2),
    ("entry_count_too_few.mtx", Matrix, EntryCount, 7),
    ("entry_count_too_few_no_newline.mtx", Matrix, EntryCount, 4),
    ("entry_count_too_many.mtx", Matrix, EntryCount, 7),
    ("entry_count_no_entries.mtx", Matrix, EntryCount, 3),
    ("entry_count_array_too_few.mtx", Matrix, EntryCount, 5),
    ("entry_count_array_too_many.mtx", Matrix, EntryCount, 7),
    ("entry_count_crlf.mtx", Matrix, EntryCount, 4),
    ("index_zero.mtx", Matrix, IndexOutOfRange, 4),
    ("index_zero_column.mtx", Matrix, IndexOutOfRange, 5),
    ("index_row_out_of_range.mtx", Matrix, IndexOutOfRange, 4),
    ("index_column_out_of_range.mtx", Matrix, IndexOutOfRange, 4),
    ("index_negative.mtx", Matrix, IndexOutOfRange, 3),
    ("index_huge.mtx", Matrix, IndexOutOfRange, 3),
    ("missing_value.mtx", Matrix, MissingValue, 4),
    ("missing_value_integer.mtx", Matrix, MissingValue, 5),
    ("missing_column.mtx", Matrix, MissingValue, 4),
    ("extra_token.mtx", Matrix, ExtraToken, 3),
    ("extra_token_comment.mtx", Matrix, ExtraToken, 4),
    ("extra_token_pattern_value.mtx", Matrix, ExtraToken, 4),
    ("extra_token_array.mtx", Matrix, ExtraToken, 3),
    ("extra_token_crlf.mtx", Matrix, ExtraToken, 4),
    ("bad_number.mtx", Matrix, BadNumber, 3),
    ("bad_number_word.mtx", Matrix, BadNumber, 4),
    ("bad_number_index.mtx", Matrix, BadNumber, 3),
    ("bad_number_integer_fraction.mtx", Matrix, BadNumber, 4),
    ("bad_number_fortran_exponent.mtx", Matrix, BadNumber, 3),
    ("bad_number_array.mtx", Matrix, BadNumber, 4),
    ("bad_number_binary.mtx", Matrix, BadNumber, 3),
    ("bad_number_escape_sequence.mtx", Matrix, BadNumber, 3),
    ("bad_number_nul.mtx", Matrix, BadNumber, 4),
    ("bad_number_long_token.mtx", Matrix, BadNumber, 4),
    ("upper_triangle.mtx", Matrix, UpperTriangle, 5),
    ("upper_triangle_skew.mtx", Matrix, UpperTriangle, 4),
    ("skew_diagonal.mtx", Matrix, SkewDiagonal, 4),
    ("non_finite_nan.mtx", Matrix, NonFinite, 3),
    ("non_finite_inf.mtx", Matrix, NonFinite, 4),
    ("non_finite_overflow.mtx", Matrix, NonFinite, 3),
    ("non_finite_array.mtx", Matrix, NonFinite, 4),
    ("non_finite_duplicate_sum.mtx", Matrix, NonFinite, 5),
    ("non_finite_symmetric_sum.mtx", Matrix, NonFinite, 6),
    ("vector_two_columns.mtx", Vector, NotAVector, 3),
    ("vector_pattern.mtx", Vector, Unsupported, 1),
    ("vector_wrong_length.mtx", VectorOf(3), WrongLength, 2),
    // 76 bytes declaring 2^31 - 1 rows (16 GiB of row pointers), and 2e8 rows with one entry.
    ("too_large_rows.mtx", Matrix, TooLarge, 2),
    ("too_large_rows_few_entries.mtx", Matrix, TooLarge, 2),
    // 40 KB that decompress to 40 MiB of comment after one declared entry: stopped at 16 MiB.
    ("too_large_gzip_bomb.mtx.gz", Matrix, TooLarge, 4),
    // All of it decodes; the gzip trailer (CRC and size) is cut off.
    ("io_truncated.mtx.gz", Matrix, Io, 4),
];

#[test]
fn each_bad_fixture_reports_its_kind_and_line() {
    let listed: Vec<&str> = BAD.iter().map(|b| b.0).collect();
    for path in files_in("bad") {
        let name = name_of(&path);
        assert!(
            listed.contains(&name.as_str()),
            "{name} has no expectation in BAD"
        );
    }
    for &(name, reader, kind, line) in BAD {
        let e = read_with(reader, &fixture("bad", name))
            .expect_err(&format!("{name} must be rejected"));
        assert_eq!((e.kind, e.line), (kind, line), "{name}: {e}");
        assert!(!e.message.is_empty(), "{name}: empty message");
        assert_eq!(e.to_string(), format!("line {line}: {kind}: {}", e.message));
    }
}

/// Every kind has at least one fixture (a new kind needs one).
#[test]
fn every_kind_has_a_fixture() {
    let all = [
        Io,
        BadBanner,
        Unsupported,
        MissingSize,
        BadSize,
        NotSquare,
        EntryCount,
        IndexOutOfRange,
        MissingValue,
        ExtraToken,
        BadNumber,
        UpperTriangle,
        SkewDiagonal,
        NonFinite,
        NotAVector,
        WrongLength,
        TooLarge,
    ];
    // NotAFile has no fixture file (git stores no FIFO): `special_files_are_refused` makes one.
    for kind in all {
        assert!(BAD.iter().any(|b| b.2 == kind), "no fixture for {kind:?}");
        let words = kind.to_string();
        assert!(
            !words.is_empty() && words == words.to_lowercase(),
            "{kind:?} displays as '{words}'"
        );
    }
}

/// The number of lines of `data` as the reader counts them (a final unterminated line counts).
fn line_count(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    (newlines + usize::from(data.last().is_some_and(|&b| b != b'\n'))).max(1)
}

/// Parses `data` in a panic guard; an error must name a line that exists.
fn parse_guarded(data: &[u8], what: &str) {
    let result = std::panic::catch_unwind(|| parse_matrix_market(data));
    match result {
        Err(_) => panic!("{what}: the reader panicked"),
        Ok(Err(e)) => assert!(
            (1..=line_count(data)).contains(&e.line),
            "{what}: line {} outside 1..={}: {e}",
            e.line,
            line_count(data)
        ),
        Ok(Ok(_)) => {}
    }
}

#[test]
fn no_fixture_panics_even_truncated_or_mangled() {
    let mut files = files_in("bad");
    files.extend(files_in("tiny"));
    for path in &files {
        let name = name_of(path);
        for reader in [Matrix, Vector] {
            let outcome = std::panic::catch_unwind(|| read_with(reader, path));
            assert!(outcome.is_ok(), "{name}: {reader:?} reader panicked");
        }
        if name.ends_with(".gz") {
            continue;
        }
        let data = std::fs::read(path).expect("fixture");
        // Every prefix is a file that ends early somewhere.
        for len in 0..data.len() {
            parse_guarded(&data[..len], &format!("{name} cut at {len}"));
        }
        // Each byte replaced by something that changes how a line splits or parses.
        for k in 0..data.len() {
            for b in [
                b'0', b'9', b' ', b'\n', b'\r', b'-', b'e', b'%', b'.', 0xff, 0,
            ] {
                let mut mangled = data.clone();
                mangled[k] = b;
                parse_guarded(&mangled, &format!("{name} byte {k} -> {b:#x}"));
            }
        }
    }
}

#[test]
fn unreadable_paths_are_io_errors_without_a_line() {
    let e = read_matrix_market(&fixture("tiny", "no_such_file.mtx")).expect_err("missing");
    assert_eq!((e.kind, e.line), (Io, 0));
    assert!(e.to_string().starts_with("i/o error: "), "{e}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrices");
    let e = read_matrix_market(&dir).expect_err("a directory");
    assert_eq!((e.kind, e.line), (NotAFile, 0), "{e}");
}

#[test]
fn gzip_cut_mid_stream_is_an_io_error() {
    let mut text = String::from("%%MatrixMarket matrix coordinate real general\n500 500 500\n");
    for i in 1..=500 {
        text.push_str(&format!("{i} {i} {}.5\n", i * 7919 % 1000));
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).expect("compress");
    let gz = gz.finish().expect("compress");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("cut.mtx.gz");
    std::fs::write(&path, &gz[..gz.len() / 2]).expect("write");
    let e = read_matrix_market(&path).expect_err("truncated gzip");
    assert_eq!(e.kind, Io, "{e}");
    assert!(e.line >= 1, "{e}");
}

#[test]
fn blank_lines_in_data_are_skipped_not_entries() {
    let m = read_tiny("blank_line_phantom.mtx");
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (3, 3, 3));
    assert_entries(&m, &[(0, 0, 1.0), (1, 1, 2.0), (2, 2, 3.0)], "phantom");
}

#[test]
fn layout_variants_parse_alike() {
    let m = read_tiny("crlf.mtx");
    assert_entries(
        &m,
        &[(0, 0, 1.5), (0, 2, 7.0), (1, 0, -2.0), (2, 2, 0.4)],
        "crlf",
    );
    let m = read_tiny("tabs_spaces.mtx");
    assert_entries(&m, &[(0, 0, 10.0), (1, 1, -20.5), (2, 0, 30.0)], "tabs");
    let m = read_tiny("comments_between.mtx");
    assert_entries(&m, &[(0, 0, 1.0), (0, 1, 2.0), (1, 1, 3.0)], "comments");
    let m = read_tiny("uppercase_banner.mtx");
    assert_entries(&m, &[(0, 0, 1.0), (1, 1, 2.0)], "uppercase");
    assert_eq!(m.symmetry(), Symmetry::General);
    let m = read_tiny("bom_crlf.mtx");
    assert_entries(&m, &[(1, 1, -1.25)], "byte order mark");
    let m = read_tiny("blank_before_banner.mtx");
    assert_entries(&m, &[(0, 0, 2.5)], "blank before banner");
    let m = read_tiny("no_final_newline.mtx");
    assert_entries(&m, &[(0, 0, 1.0), (1, 1, 2.0)], "no final newline");
    let m = read_tiny("empty.mtx");
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (3, 2, 0));
    let m = read_tiny("gzipped.mtx.gz");
    assert_entries(&m, &[(0, 0, 1.0), (1, 1, 2.0), (2, 2, 3.0)], "gz");
}

#[test]
fn fields_pattern_and_integer() {
    let m = read_tiny("pattern.mtx");
    assert_eq!((m.nrows(), m.ncols()), (3, 4));
    assert_entries(&m, &[(0, 1, 1.0), (1, 0, 1.0), (2, 3, 1.0)], "pattern");
    let m = read_tiny("pattern_symmetric.mtx");
    assert_entries(
        &m,
        &[
            (0, 0, 1.0),
            (0, 1, 1.0),
            (1, 0, 1.0),
            (1, 2, 1.0),
            (2, 1, 1.0),
        ],
        "pattern symmetric",
    );
    let m = read_tiny("integer.mtx");
    let big: f64 = "123456789012345678901".parse().expect("literal");
    assert_entries(
        &m,
        &[(0, 0, -7.0), (0, 2, 12.0), (1, 1, 0.0), (1, 2, big)],
        "integer",
    );
}

#[test]
fn symmetric_files_are_mirrored() {
    let m = read_tiny("symmetric.mtx");
    assert_eq!(m.symmetry(), Symmetry::Symmetric);
    // The diagonal is not doubled.
    assert_entries(
        &m,
        &[
            (0, 0, 4.0),
            (0, 1, -1.0),
            (0, 2, 0.5),
            (1, 0, -1.0),
            (1, 1, 4.0),
            (2, 0, 0.5),
        ],
        "symmetric",
    );
    let m = read_tiny("skew_symmetric.mtx");
    assert_eq!(m.symmetry(), Symmetry::SkewSymmetric);
    assert_entries(
        &m,
        &[(0, 1, -1.5), (1, 0, 1.5), (1, 2, 2.0), (2, 1, -2.0)],
        "skew",
    );
    let m = read_tiny("mixed_case_banner.mtx");
    assert_eq!(m.symmetry(), Symmetry::SkewSymmetric);
    assert_entries(&m, &[(0, 1, -5.0), (1, 0, 5.0)], "mixed case skew integer");
}

#[test]
fn array_files_are_column_major() {
    let m = read_tiny("array_general.mtx");
    // Every value is stored, the zero included.
    assert_entries(
        &m,
        &[
            (0, 0, 1.0),
            (0, 1, 3.0),
            (0, 2, 0.0),
            (1, 0, 2.0),
            (1, 1, 4.0),
            (1, 2, 6.0),
        ],
        "array general",
    );
    let m = read_tiny("array_symmetric.mtx");
    assert_eq!(m.symmetry(), Symmetry::Symmetric);
    let dense = [[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]];
    let expected: Vec<_> = (0..3)
        .flat_map(|i| (0..3).map(move |j| (i, j, dense[i][j])))
        .collect();
    assert_entries(&m, &expected, "array symmetric");
    let m = read_tiny("array_skew.mtx");
    assert_eq!(m.symmetry(), Symmetry::SkewSymmetric);
    assert_entries(
        &m,
        &[
            (0, 1, -1.0),
            (0, 2, -2.0),
            (1, 0, 1.0),
            (1, 2, -3.0),
            (2, 0, 2.0),
            (2, 1, 3.0),
        ],
        "array skew",
    );
}

#[test]
fn duplicates_summed_in_file_order_and_zeros_kept() {
    let m = read_tiny("duplicates.mtx");
    assert_entries(
        &m,
        &[(0, 0, (1.0 + 2.0) + 0.25), (1, 0, 3.0), (1, 1, 0.5)],
        "duplicates",
    );
    let m = read_tiny("explicit_zero.mtx");
    assert_eq!(m.nnz(), 3);
    assert_entries(&m, &[(0, 0, 1.0), (1, 1, 0.0), (2, 0, -0.0)], "zeros");
    // The stored zero counts as a diagonal entry; row 3 has none.
    assert_eq!(m.rows_missing_diagonal(), vec![2]);
}

#[test]
fn numbers_are_correctly_rounded() {
    let m = read_tiny("numbers.mtx");
    assert_entries(
        &m,
        &[
            (0, 0, f64::from_bits(0x3FB9_9999_9999_999A)),
            (0, 1, 0.5),
            (0, 2, 5.0),
            (0, 3, -2.5e10),
            (0, 4, f64::from_bits(1)),
            // The value that hung PHP and Java's parsers: the largest subnormal.
            (0, 5, f64::from_bits(0x000F_FFFF_FFFF_FFFF)),
        ],
        "numbers",
    );
}

#[test]
fn vectors() {
    let x = read_vector(&fixture("tiny", "vector_array.mtx")).expect("array vector");
    assert_eq!(x, vec![1.5, -2.0, 0.0, 400.0]);
    let x = read_vector(&fixture("tiny", "vector_coordinate.mtx")).expect("coordinate vector");
    assert_eq!(x, vec![0.0, 1.5, 0.0, 0.0, -3.0]);
    let e = read_vector(&fixture("tiny", "crlf.mtx")).expect_err("3 x 3 is no vector");
    assert_eq!((e.kind, e.line), (NotAVector, 3));
    assert!(e.message.contains("3 x 3"), "{e}");
}

#[test]
fn parse_from_a_reader() {
    let text = "%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 -3.5\n";
    let m = parse_matrix_market(text.as_bytes()).expect("valid");
    assert_entries(&m, &[(1, 0, -3.5)], "reader");
}

/// A body big enough for the parallel path (over 1 MiB), as file text and expected entries.
fn big_file(symmetric: bool, entries: usize) -> (String, Vec<(usize, usize, f64)>) {
    let n = 5000;
    let kind = if symmetric { "symmetric" } else { "general" };
    let mut text = format!("%%MatrixMarket matrix coordinate real {kind}\n{n} {n} {entries}\n");
    let mut expected = Vec::new();
    for k in 0..entries {
        let (mut i, mut j) = ((k * 7919) % n, (k * 104_729 + k / n) % n);
        if symmetric && i < j {
            (i, j) = (j, i);
        }
        let v = (k as f64 + 0.5) / 3.0;
        text.push_str(&format!("{} {} {v:e}\n", i + 1, j + 1));
        if k % 1000 == 0 {
            text.push_str("% a comment in the middle\n\n");
        }
        expected.push((i, j, v));
        if symmetric && i != j {
            expected.push((j, i, v));
        }
    }
    expected.sort_by_key(|&(i, j, _)| (i, j));
    expected.dedup_by(|b, a| {
        let same = (a.0, a.1) == (b.0, b.1);
        if same {
            a.2 += b.2;
        }
        same
    });
    (text, expected)
}

fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
        .install(f)
}

#[test]
fn large_files_parse_alike_on_any_thread_count() {
    for symmetric in [false, true] {
        let (text, expected) = big_file(symmetric, 60_000);
        assert!(text.len() > 1 << 20);
        for threads in [1, 2, 3] {
            let m = with_threads(threads, || parse_matrix_market(text.as_bytes()))
                .expect("valid big file");
            assert_entries(&m, &expected, &format!("big, {threads} threads"));
        }
    }
}

#[test]
fn large_files_report_first_error_with_its_line() {
    let (text, _) = big_file(false, 60_000);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    // Two bad lines far apart: the first in file order must be reported.
    lines[40_000] = "1 1 oops".into();
    lines[50_000] = "0 1 1.0".into();
    let bad = lines.join("\n");
    for threads in [1, 2, 4] {
        let e = with_threads(threads, || parse_matrix_market(bad.as_bytes())).expect_err("bad");
        assert_eq!(
            (e.kind, e.line),
            (BadNumber, 40_001),
            "{threads} threads: {e}"
        );
    }
    // One entry too many, and one too few.
    let mut extra = text.clone();
    extra.push_str("1 1 1.0\n");
    let extra_line = extra.lines().count();
    let e = with_threads(2, || parse_matrix_market(extra.as_bytes())).expect_err("extra");
    assert_eq!((e.kind, e.line), (EntryCount, extra_line));
    let short = &text[..text.trim_end().rfind('\n').expect("lines")];
    let e = with_threads(2, || parse_matrix_market(short.as_bytes())).expect_err("short");
    assert_eq!((e.kind, e.line), (EntryCount, short.lines().count()));
}

/// The sorted `(row, col, value)` triplets of nalgebra-sparse's COO, duplicates summed in
/// triplet order (as `CsrMatrix::from_coo` sums them).
fn nalgebra_triplets(path: &Path, integer: bool) -> Result<Vec<(usize, usize, f64)>, String> {
    use nalgebra_sparse::io::load_coo_from_matrix_market_file as load;
    let mut t: Vec<(usize, usize, f64)> = if integer {
        // nalgebra reads integer files only into integer types.
        let coo = load::<i64, _>(path).map_err(|e| format!("{e:?}"))?;
        coo.triplet_iter()
            .map(|(i, j, &v)| (i, j, v as f64))
            .collect()
    } else {
        let coo = load::<f64, _>(path).map_err(|e| format!("{e:?}"))?;
        coo.triplet_iter().map(|(i, j, &v)| (i, j, v)).collect()
    };
    t.sort_by_key(|&(i, j, _)| (i, j));
    let mut summed: Vec<(usize, usize, f64)> = Vec::with_capacity(t.len());
    for (i, j, v) in t {
        match summed.last_mut() {
            Some(last) if (last.0, last.1) == (i, j) => last.2 += v,
            _ => summed.push((i, j, v)),
        }
    }
    Ok(summed)
}

#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn shared_matrices_match_nalgebra_sparse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/matrices");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("shared matrices")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no .mtx files in {}", dir.display());
    for path in &paths {
        let name = name_of(path);
        let m = read_matrix_market(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let banner = std::fs::read_to_string(path).expect("text");
        let banner = banner.lines().next().unwrap_or("").to_lowercase();
        let theirs = nalgebra_triplets(path, banner.contains(" integer "))
            .unwrap_or_else(|e| panic!("{name}: nalgebra-sparse failed: {e}"));
        let ours = triplets(&m);
        assert_eq!(ours.len(), theirs.len(), "{name}: stored entries differ");
        for (a, b) in ours.iter().zip(&theirs) {
            assert!(
                (a.0, a.1) == (b.0, b.1) && a.2.to_bits() == b.2.to_bits(),
                "{name}: ours {a:?}, nalgebra-sparse {b:?}"
            );
        }
        let declared = if banner.contains("skew-symmetric") {
            Symmetry::SkewSymmetric
        } else if banner.contains("symmetric") {
            Symmetry::Symmetric
        } else {
            Symmetry::General
        };
        assert_eq!(m.symmetry(), declared, "{name}");
    }
}

#[test]
fn reading_stays_within_the_memory_budget() {
    let small = ReadLimits {
        memory_budget: Some(200),
        allow_special_files: false,
    };
    let e = read_matrix_market_with(&fixture("tiny", "crlf.mtx"), &small).expect_err("budget");
    assert_eq!(e.kind, TooLarge, "{e}");
    assert!(e.message.contains("200 bytes of memory available"), "{e}");
    let e = precsolve::sparse::load_matrix_with("poisson3d:100", &small).expect_err("budget");
    assert!(e.to_string().contains("poisson3d:100"), "{e}");
    // A file larger than the budget is refused from its size, before it is read.
    let big = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrices/graded_spd_400.mtx");
    let e = read_matrix_market_with(&big, &small).expect_err("file size");
    assert!(e.message.contains("the file is"), "{e}");
    read_matrix_market_with(&big, &ReadLimits::unlimited()).expect("no limit");
}

/// Found by `tests/fuzz.rs` (seed 1795691839): a symmetric header declaring more than 2^63
/// entries overflowed the cost check's doubling; it is refused as too large.
#[test]
fn a_declared_entry_count_past_half_the_integers_is_refused_not_overflowed() {
    let text = b"%%MatrixMarket matrix coordinate real symmetric\n3 3 9999999999999999999\n4\n";
    let e = parse_matrix_market(&text[..]).expect_err("absurd header");
    assert_eq!(e.kind, TooLarge, "{e}");
}

#[test]
fn a_stream_is_cut_at_what_its_declared_entries_can_take() {
    // One declared entry, then an endless comment: stopped at 256 bytes + 16 MiB past the header.
    struct Endless(usize);
    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let header = b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n%";
            let n = buf.len();
            for (i, b) in buf.iter_mut().enumerate() {
                *b = header.get(self.0 + i).copied().unwrap_or(b'x');
            }
            self.0 += n;
            Ok(n)
        }
    }
    let e = parse_matrix_market(Endless(0)).expect_err("endless");
    assert_eq!(e.kind, TooLarge, "{e}");
    assert!(e.message.contains("1 declared entries"), "{e}");
    // No banner in the first bytes: refused at once, however long the stream.
    let zeros = std::io::repeat(0).take(u64::MAX);
    let e = parse_matrix_market(zeros).expect_err("zeros");
    assert_eq!(e.kind, BadBanner, "{e}");
}

#[cfg(unix)]
#[test]
fn special_files_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.mtx");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let e = read_matrix_market(&fifo).expect_err("a FIFO");
    assert_eq!((e.kind, e.line), (NotAFile, 0), "{e}");
    assert!(e.message.contains("FIFO"), "{e}");
    // Allowed, a FIFO is read like a stream: here a writer sends a small matrix.
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        std::fs::write(
            writer_path,
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 4\n2 2 5\n",
        )
    });
    let allowed = ReadLimits {
        allow_special_files: true,
        ..ReadLimits::default()
    };
    let m = read_matrix_market_with(&fifo, &allowed).expect("read from the FIFO");
    writer.join().unwrap().unwrap();
    assert_entries(&m, &[(0, 0, 4.0), (1, 1, 5.0)], "fifo");
}
