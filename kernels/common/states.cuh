// The device-resident states and records of CG and BiCGStab, for their step kernels
// (kernels/cg.cu, kernels/bicgstab.cu) and their persistent kernels (cg_persistent.cu,
// bicgstab_persistent.cu).

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
