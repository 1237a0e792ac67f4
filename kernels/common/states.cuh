// The device-resident states and records of CG and BiCGStab, for their step kernels
// (kernels/cg.cu, kernels/bicgstab.cu) and their persistent kernels (cg_persistent.cu,
// bicgstab_persistent.cu, the one-block ILU(0) kernels), and CG's decisions on <p, q>, on
// <r, z> and at an iteration's close, which its step, persistent and one-block kernels share.

// The layout of CgScalars in src/backend/cuda/cg.rs.
template <typename T>
struct cg_state {
    T pq, alpha, accepted, rr, rho, rho_prev, beta;
    int done;     // iterations completed
    int frozen;   // the iteration whose scalars stopped the solve (0: none)
    int pending;  // the last step's alpha is still to be added to x
    unsigned int ticket;  // cgs_update's blocks done (its last block closes the iteration)
};

// Iteration k's scalars, in records[(k - 1) % cap] (CgRecord in src/solver/cg/steps.rs).
template <typename T>
struct cg_record {
    T rho, pq, rr;
};

// CG's decision on <p, q> (cgs_alpha, and its twins in the kernels that run whole batches):
// accepted where finite and positive (pq_accepted, src/solver/cg/steps.rs), alpha = rho / <p, q>; else alpha 0 and the solve stops
// at iteration k. Where `write`, the record and the state are stored. Returns whether it was
// accepted, alpha in `alpha`.
template <class O>
__device__ __forceinline__ bool cg_take_pq(bool write, int k, typename O::V pq, typename O::V rho,
                                           cg_state<typename O::T>* s,
                                           cg_record<typename O::T>* rec, int cap,
                                           typename O::V& alpha) {
    const bool ok = O::finite(pq) && O::to_f64(pq) > 0.0;
    alpha = ok ? O::div(rho, pq) : O::of(0.0);
    if (write) {
        O::store(&rec[(k - 1) % cap].pq, 0, pq);
        O::store(&s->pq, 0, pq);
        O::store(&s->alpha, 0, alpha);
        O::store(&s->accepted, 0, O::of(ok ? 1.0 : 0.0));
        s->pending = ok;
        if (!ok) s->frozen = k;
    }
    return ok;
}

// CG's decision on <r, z> at iteration k (cgs_rho, and the one-block kernel with ILU(0)):
// recorded; a rho that stops (rho_stops) freezes the solve at k; else, after the first
// iteration, beta = rho / rho_prev, and rho is stored. Returns whether it stopped.
template <class O>
__device__ __forceinline__ bool cg_take_rho(int k, typename O::V rho, cg_state<typename O::T>* s,
                                            cg_record<typename O::T>* rec, int cap) {
    O::store(&rec[(k - 1) % cap].rho, 0, rho);
    if (rho_stops<O>(rho)) {
        freeze_at<O>(s, k);
        return true;
    }
    if (k > 1) O::store(&s->beta, 0, O::div(rho, O::load(&s->rho_prev, 0)));
    O::store(&s->rho, 0, rho);
    return false;
}

// CG's close of iteration k (cgs_close, and its twins in the kernels that run whole batches):
// the stopping test on <r, r>; without a preconditioner (`identity`) the next iteration's rho
// is this <r, r>, which may stop the solve at k + 1. `rho` is iteration k's. Where `write`, the
// record and the state are stored. Returns the iteration that stopped the solve (0: none).
template <class O>
__device__ __forceinline__ int cg_close(bool write, int k, typename O::V rr, typename O::V rho,
                                        bool identity, cg_state<typename O::T>* s,
                                        cg_record<typename O::T>* rec, int cap,
                                        double denominator, double tol) {
    const bool stop = threshold_reached(O::norm(rr), denominator, tol);
    int stopped = 0;
    if (identity && !stop && rho_stops<O>(rr)) stopped = k + 1;
    if (stop) stopped = k;
    if (write) {
        O::store(&rec[(k - 1) % cap].rr, 0, rr);
        O::store(&s->rr, 0, rr);
        s->done = k;
        O::store(&s->rho_prev, 0, rho);
        if (identity) {
            O::store(&s->beta, 0, O::div(rr, rho));
            O::store(&s->rho, 0, rr);
            O::store(&rec[k % cap].rho, 0, rr);
        }
        if (stopped) freeze_at<O>(s, stopped);
    }
    return stopped;
}

// The layout of BicgScalars in src/backend/cuda/bicgstab.rs; its first eleven fields are the
// block the bicg_ kernels index (kernels/bicgstab.cu).
template <typename T>
struct bicg_state {
    T rv, alpha, accepted, ss, half, tt, ts, omega, omega_ok, rr, rho_next;  // the block
    T rho, rho_prev, beta;
    int done;    // iterations completed (a half step that stops counts)
    int frozen;  // the iteration whose scalars stopped the solve (0: none)
    int pad0, pad1;
};

template <typename T>
struct bicg_record {
    T rho, rv, ss, omega, rr;
};
