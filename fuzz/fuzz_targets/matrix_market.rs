//! The Matrix Market reader on arbitrary bytes: it must return, never panic; an accepted
//! matrix must pass the CSR invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use precsolve::sparse::parse_matrix_market;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = parse_matrix_market(data) {
        m.check_invariants()
            .expect("an accepted matrix keeps the CSR invariants");
    }
});
