//! Seeded random tensors, reproducible whatever the number of threads: the
//! elements are generated in fixed chunks, each from its own stream derived
//! from (seed, chunk index).

use super::Tensor;
use crate::{with_dtype, DType, Device, Element, Error, Result};
use rayon::prelude::*;

const CHUNK: usize = 1 << 16;

/// SplitMix64: small, fast, and good enough for test and benchmark data.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64, stream: u64) -> Self {
        let mut s = SplitMix64(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        s.next_u64();
        s
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

fn fill_chunks<T: Element>(
    numel: usize,
    seed: u64,
    gen: impl Fn(&mut SplitMix64) -> T + Sync,
) -> Result<Vec<T>> {
    let mut data = super::storage::try_vec(T::default(), numel)?;
    data.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = SplitMix64::new(seed, i as u64);
            chunk.iter_mut().for_each(|x| *x = gen(&mut rng));
        });
    Ok(data)
}

impl Tensor {
    /// Samples of the standard normal distribution, as `torch.randn`, from a
    /// seeded generator: the same seed gives the same tensor on every machine.
    /// Only floating dtypes (as in torch); made on the host, then moved to `device`.
    pub fn randn(shape: &[usize], dtype: DType, device: Device, seed: u64) -> Result<Tensor> {
        if !dtype.is_floating_point() {
            return Err(Error::Unsupported(format!(
                "randn needs a floating dtype, got {dtype} (use randint)"
            )));
        }
        let numel = super::checked_shape(shape, dtype.size_in_bytes())?;
        let host = with_dtype!(dtype, T => Tensor::from_vec(fill_chunks::<T>(numel, seed, |r| {
            // Box-Muller, one sample per pair of uniforms (simple and branch-free).
            let (u1, u2) = (r.next_unit(), r.next_unit());
            T::from_f64((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos())
        })?, shape)?);
        host.to_device(device)
    }

    /// Integers drawn uniformly from `low..high`, as `torch.randint`, cast to
    /// `dtype` (any dtype; `Bool` gets `value != 0`).
    pub fn randint(
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
        device: Device,
        seed: u64,
    ) -> Result<Tensor> {
        if low >= high {
            return Err(Error::Unsupported(format!(
                "randint needs low < high, got {low}..{high}"
            )));
        }
        let numel = super::checked_shape(shape, dtype.size_in_bytes())?;
        let span = (high as i128 - low as i128) as u128;
        let host = with_dtype!(dtype, T => Tensor::from_vec(fill_chunks::<T>(numel, seed, |r| {
            T::from_i64((low as i128 + (r.next_u64() as u128 % span) as i128) as i64)
        })?, shape)?);
        host.to_device(device)
    }
}
