// One thread per element: the index, and an early return past the end (kernels take n first).
#define ELEMENT_INDEX                                                        \
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  \
    if (i >= n) return;
