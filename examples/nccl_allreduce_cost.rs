//! The cost of the fixed reduction order across the GPUs of one host (issue #31): a `dot` as
//! `--devices` computes it (each GPU's chunk partials broadcast by NCCL into every GPU's copy
//! of the whole list, which each GPU sums in the single GPU's order: the same bits at any GPU
//! count) against each GPU's own sum followed by `ncclAllReduce` (what codes without that
//! guarantee do: bits that change with the GPU count). f64, both over the same rows, the value
//! read back to the host each call, median of 9 rounds of 200 calls; on GPUs `0..N`
//! (N: the first argument, default 2).
//!
//! Run: `cargo run --release --example nccl_allreduce_cost [-- N]` on a host with N GPUs and
//! NCCL (`benches/gpu/devices.sh allreduce`).

use precsolve::backend::Backend;
use precsolve::backend::cuda::CudaBackend;
use precsolve::distributed::BlockBackend;
use precsolve::distributed::devices::DeviceGroup;
#[path = "common/timing.rs"]
mod timing;
use timing::median_seconds;

/// (fixed order, plain all-reduce) seconds a call on this GPU, and whether the two sums'
/// bits agreed.
fn measure(b: &BlockBackend<CudaBackend>, x: &[f64]) -> precsolve::Result<(f64, f64, bool)> {
    let spread = b.vector_from_f64::<f64>(x)?;
    let rows = b.partition().rows(b.comm().rank());
    let own = b.inner().vector_from_f64::<f64>(&x[rows])?;
    let same = b.dot(&spread, &spread)? == b.inner().plain_all_reduce_dot(b.link(), &own, &own)?;
    let fixed = median_seconds(|| {
        std::hint::black_box(b.dot(&spread, &spread).expect("the fixed-order dot"));
    });
    let plain = median_seconds(|| {
        let sum = b.inner().plain_all_reduce_dot(b.link(), &own, &own);
        std::hint::black_box(sum.expect("the all-reduce dot"));
    });
    Ok((fixed, plain, same))
}

fn main() -> precsolve::Result<()> {
    let count = std::env::args()
        .nth(1)
        .map_or(2, |n| n.parse().expect("a GPU count"));
    let group = DeviceGroup::open(Some(count))?;
    println!("{}", group.describe());
    println!(
        "| rows | fixed order (broadcast of partials) [us] | ncclAllReduce [us] | ratio | same bits |"
    );
    println!("|---:|---:|---:|---:|---|");
    for k in [22, 50, 100, 200] {
        let a = precsolve::poisson3d(k);
        let n = a.nrows();
        let x: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f64 / 997.0 - 0.5)
            .collect();
        let (fixed, plain, same) = group.run(&a, |b| measure(b, &x), |b| measure(b, &x))?;
        println!(
            "| {n} | {:.1} | {:.1} | {:.2} | {} |",
            fixed * 1e6,
            plain * 1e6,
            fixed / plain,
            if same { "yes" } else { "no" }
        );
    }
    Ok(())
}
