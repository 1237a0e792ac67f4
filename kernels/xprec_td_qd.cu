// The kernels of xprec.cu's templates for td and qd, and the conversions between the
// precisions (compiled after xprec.cu, as one source: `xprec`).

X_KERNELS(td, TdOps)
X_KERNELS(qd, QdOps)
// td only: qd's SpMV is bound by its arithmetic, and the tile's tree cost more there than the
// dot's pass saved (src/backend/cuda/spmv_dot.rs).
X_SPMV_DOT(td, TdOps)

// Conversions through double-double, as Backend::convert: Q::from_dd(P::to_dd(x)).
// f64::from_dd is the high word, Qd::to_dd keeps (x0, x1), Td::from_dd is td_pack.
extern "C" __global__ void convert_f64_to_td(long long n, const double* x, td_ptr y) {
    ELEMENT_INDEX
    td_store(y, i, dd_from_f64(x[i]));
}
extern "C" __global__ void convert_td_to_f64(long long n, td_ptr x, double* y) {
    ELEMENT_INDEX
    y[i] = x.hi[i];
}
extern "C" __global__ void convert_dd_to_td(long long n, const double2* x, td_ptr y) {
    ELEMENT_INDEX
    td_store(y, i, dd_load(x, i));
}
extern "C" __global__ void convert_td_to_dd(long long n, td_ptr x, double2* y) {
    ELEMENT_INDEX
    dd_store(y, i, td_load(x, i));
}
extern "C" __global__ void convert_f64_to_qd(long long n, const double* x, double* y) {
    ELEMENT_INDEX
    qd_store(y, i, qd_from_f64(x[i]));
}
extern "C" __global__ void convert_qd_to_f64(long long n, const double* x, double* y) {
    ELEMENT_INDEX
    y[i] = x[4 * i];
}
extern "C" __global__ void convert_dd_to_qd(long long n, const double2* x, double* y) {
    ELEMENT_INDEX
    const dd_t v = dd_load(x, i);
    qd_store(y, i, qd_make(v.hi, v.lo, 0.0, 0.0));
}
extern "C" __global__ void convert_qd_to_dd(long long n, const double* x, double2* y) {
    ELEMENT_INDEX
    const qd_t v = qd_load(x, i);
    y[i] = make_double2(v.x0, v.x1);
}
extern "C" __global__ void convert_td_to_qd(long long n, td_ptr x, double* y) {
    ELEMENT_INDEX
    const dd_t v = td_load(x, i);
    qd_store(y, i, qd_make(v.hi, v.lo, 0.0, 0.0));
}
extern "C" __global__ void convert_qd_to_td(long long n, const double* x, td_ptr y) {
    ELEMENT_INDEX
    const qd_t v = qd_load(x, i);
    dd_t d = {v.x0, v.x1};
    td_store(y, i, d);
}
