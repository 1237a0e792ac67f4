//! The Matrix Market reader on arbitrary bytes: it must return, never panic; an accepted
//! matrix must pass the CSR invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use precsolve::sparse::{CsrMatrix, parse_matrix_market};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = parse_matrix_market(data) {
        CsrMatrix::try_from_parts(
            m.nrows(),
            m.ncols(),
            m.row_ptr().to_vec(),
            m.col_idx().to_vec(),
            m.values().to_vec(),
            m.symmetry(),
        )
        .expect("an accepted matrix keeps the CSR invariants");
    }
});
