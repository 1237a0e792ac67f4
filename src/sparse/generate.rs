//! Generated test problems, accepted wherever a matrix path is: `poisson2d:N` (5-point Laplacian
//! on an N x N grid) and `poisson3d:N` (7-point Laplacian on an N x N x N grid). Both are
//! symmetric positive definite, so large benchmarks need no file.

use super::{CsrMatrix, Symmetry};
use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeneratedMatrix {
    Poisson2d(usize),
    Poisson3d(usize),
}

impl GeneratedMatrix {
    /// `Ok(None)` when `spec` is not a generator spec (so it is taken as a path).
    pub fn parse(spec: &str) -> Result<Option<Self>> {
        let Some((name, size)) = spec.split_once(':') else {
            return Ok(None);
        };
        let make: fn(usize) -> Self = match name {
            "poisson2d" => GeneratedMatrix::Poisson2d,
            "poisson3d" => GeneratedMatrix::Poisson3d,
            _ => return Ok(None),
        };
        let n: usize = size.parse().map_err(|_| {
            Error::InvalidInput(format!(
                "generated matrix '{spec}': grid size '{size}' is not a positive integer"
            ))
        })?;
        let rows = match make(n) {
            GeneratedMatrix::Poisson2d(n) => n.checked_mul(n),
            GeneratedMatrix::Poisson3d(n) => n.checked_mul(n).and_then(|m| m.checked_mul(n)),
        };
        match rows {
            Some(r) if n > 0 && r <= i32::MAX as usize / 8 => Ok(Some(make(n))),
            _ => Err(Error::InvalidInput(format!(
                "generated matrix '{spec}': grid size must be at least 1 and give fewer than {} rows",
                i32::MAX / 8
            ))),
        }
    }

    /// Rows of the generated matrix.
    pub fn rows(self) -> usize {
        match self {
            GeneratedMatrix::Poisson2d(n) => n * n,
            GeneratedMatrix::Poisson3d(n) => n * n * n,
        }
    }

    /// Bytes the CSR arrays take: a row pointer and at most 7 entries (12 bytes each) a row.
    pub fn bytes(self) -> u64 {
        let per_row = match self {
            GeneratedMatrix::Poisson2d(_) => 8 + 5 * 12,
            GeneratedMatrix::Poisson3d(_) => 8 + 7 * 12,
        };
        self.rows() as u64 * per_row
    }

    pub fn build(self) -> CsrMatrix {
        match self {
            GeneratedMatrix::Poisson2d(n) => poisson2d(n),
            GeneratedMatrix::Poisson3d(n) => poisson3d(n),
        }
    }
}

/// 5-point Laplacian on an `n x n` grid with Dirichlet boundary: 4 on the diagonal, -1 off it.
pub fn poisson2d(n: usize) -> CsrMatrix {
    stencil_matrix(&[n, n, 1])
}

/// 7-point Laplacian on an `n x n x n` grid with Dirichlet boundary: 6 on the diagonal, -1 off it.
pub fn poisson3d(n: usize) -> CsrMatrix {
    stencil_matrix(&[n, n, n])
}

/// Row-major grid of dims `[nx, ny, nz]`; neighbours along each axis of extent > 1.
fn stencil_matrix(dims: &[usize; 3]) -> CsrMatrix {
    let [nx, ny, nz] = *dims;
    let rows = nx * ny * nz;
    let axes = dims.iter().filter(|&&d| d > 1).count().max(1);
    let diagonal = 2.0 * axes as f64;
    let strides = [1, nx, nx * ny];
    let mut row_ptr = Vec::with_capacity(rows + 1);
    let mut col_idx = Vec::with_capacity(rows * (2 * axes + 1));
    let mut values = Vec::with_capacity(rows * (2 * axes + 1));
    row_ptr.push(0);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let idx = i + nx * (j + ny * k);
                let coord = [i, j, k];
                // Columns in increasing order: -z, -y, -x, diagonal, +x, +y, +z.
                for axis in (0..3).rev() {
                    if dims[axis] > 1 && coord[axis] > 0 {
                        col_idx.push((idx - strides[axis]) as i32);
                        values.push(-1.0);
                    }
                }
                col_idx.push(idx as i32);
                values.push(diagonal);
                for axis in 0..3 {
                    if dims[axis] > 1 && coord[axis] + 1 < dims[axis] {
                        col_idx.push((idx + strides[axis]) as i32);
                        values.push(-1.0);
                    }
                }
                row_ptr.push(col_idx.len());
            }
        }
    }
    CsrMatrix::try_from_parts(rows, rows, row_ptr, col_idx, values, Symmetry::Symmetric)
        .expect("stencil generator builds a valid CSR")
}
