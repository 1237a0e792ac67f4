// CG's device-resident state and records, for its step kernels (kernels/cg.cu) and the
// persistent kernel (kernels/cg_persistent.cu).

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
