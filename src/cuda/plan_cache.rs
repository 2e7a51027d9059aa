//! Launch plans kept between calls. A plan is a pure function of the
//! device, the op's signature and the input view's layout (shape, strides,
//! storage offset) with the reduced dims, so the same call on another
//! tensor of the same layout reuses it: building the iterator and the plan
//! is about a microsecond, a fifth of a small reduction's host time.
//! A lookup allocates nothing: entries are found by a hash of the borrowed
//! layout and compared field by field.

use super::plan::ReducePlan;
use crate::reduce::Signature;
use crate::Tensor;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// Plans kept at most. A workload reduces a bounded set of layouts; one
/// that cycles through more simply rebuilds. When full the cache is emptied
/// rather than ordered by use: a hit then costs one lock and one compare.
const CAPACITY: usize = 256;

/// What a plan is a function of, borrowed from the call.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) struct PlanKey<'a> {
    ordinal: usize,
    signature: Signature,
    shape: &'a [usize],
    strides: &'a [isize],
    offset: usize,
    mask: &'a [bool],
}

impl<'a> PlanKey<'a> {
    /// The key of reducing `input` over `mask` with `signature` on device
    /// `ordinal`.
    pub(crate) fn new(
        ordinal: usize,
        signature: &Signature,
        input: &'a Tensor,
        mask: &'a [bool],
    ) -> Self {
        PlanKey {
            ordinal,
            signature: *signature,
            shape: input.shape(),
            strides: input.strides(),
            offset: input.storage_offset(),
            mask,
        }
    }

    fn fingerprint(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

/// An entry: the key, owned, and its plan.
struct Entry {
    ordinal: usize,
    signature: Signature,
    shape: Box<[usize]>,
    strides: Box<[isize]>,
    offset: usize,
    mask: Box<[bool]>,
    plan: Arc<ReducePlan>,
}

impl Entry {
    fn key(&self) -> PlanKey<'_> {
        PlanKey {
            ordinal: self.ordinal,
            signature: self.signature,
            shape: &self.shape,
            strides: &self.strides,
            offset: self.offset,
            mask: &self.mask,
        }
    }
}

/// Buckets by fingerprint, and the number of entries in all of them.
#[derive(Default)]
struct Table {
    buckets: HashMap<u64, Vec<Entry>>,
    len: usize,
}

fn table() -> std::sync::MutexGuard<'static, Table> {
    static PLANS: OnceLock<Mutex<Table>> = OnceLock::new();
    PLANS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The plan kept for `key`, if any.
pub(crate) fn get(key: &PlanKey<'_>) -> Option<Arc<ReducePlan>> {
    table()
        .buckets
        .get(&key.fingerprint())?
        .iter()
        .find(|e| e.key() == *key)
        .map(|e| e.plan.clone())
}

/// Keeps `plan` for `key` and returns it shared. Two threads that built
/// the same plan at once keep the first; both plans are the same value.
pub(crate) fn insert(key: &PlanKey<'_>, plan: ReducePlan) -> Arc<ReducePlan> {
    let plan = Arc::new(plan);
    let mut table = table();
    if table.len >= CAPACITY {
        table.buckets.clear();
        table.len = 0;
    }
    let bucket = table.buckets.entry(key.fingerprint()).or_default();
    if !bucket.iter().any(|e| e.key() == *key) {
        bucket.push(Entry {
            ordinal: key.ordinal,
            signature: key.signature,
            shape: key.shape.into(),
            strides: key.strides.into(),
            offset: key.offset,
            mask: key.mask.into(),
            plan: plan.clone(),
        });
        table.len += 1;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::plan::DeviceProps;
    use crate::iter::TensorIterator;
    use crate::reduce::ReduceOp;
    use crate::{DType, Device, Result};

    fn build(x: &Tensor, mask: &[bool], sig: &Signature) -> Result<ReducePlan> {
        let iter = TensorIterator::reduce_op(x, mask, sig.output)?;
        ReducePlan::new(&iter, sig, &DeviceProps::h200())
    }

    #[test]
    fn a_layout_is_planned_once_and_its_neighbours_apart() {
        // Ordinals no other test uses: nothing is kept for them yet.
        let base = Tensor::zeros(&[6, 5, 4], DType::F32, Device::Cpu).unwrap();
        let x = base.narrow(0, 0, 5).unwrap();
        let sig = ReduceOp::Sum.signature(DType::F32, None).unwrap();
        let mask = [false, true, false];
        let key = PlanKey::new(1000, &sig, &x, &mask);
        assert!(get(&key).is_none());
        let kept = insert(&key, build(&x, &mask, &sig).unwrap());
        // Another tensor of the same layout finds it.
        let same = Tensor::zeros(&[5, 5, 4], DType::F32, Device::Cpu).unwrap();
        let hit = get(&PlanKey::new(1000, &sig, &same, &mask)).expect("kept");
        assert!(Arc::ptr_eq(&kept, &hit));
        assert_eq!(*hit, build(&same, &mask, &sig).unwrap());
        // Inserting the same key again keeps the first plan.
        let again = insert(&key, build(&x, &mask, &sig).unwrap());
        assert!(Arc::ptr_eq(&get(&key).unwrap(), &kept) && !Arc::ptr_eq(&again, &kept));
        // Each field of the key alone changes what it maps to.
        let shifted = base.narrow(0, 1, 5).unwrap();
        let shorter = x.narrow(2, 0, 3).unwrap();
        let wider = Tensor::zeros(&[5, 5, 8], DType::F32, Device::Cpu).unwrap();
        let strided = wider.narrow(2, 0, 4).unwrap();
        let mean = ReduceOp::Mean.signature(DType::F32, None).unwrap();
        for (what, key) in [
            ("device", PlanKey::new(1001, &sig, &x, &mask)),
            ("op", PlanKey::new(1000, &mean, &x, &mask)),
            ("dims", PlanKey::new(1000, &sig, &x, &[true, false, false])),
            ("shape", PlanKey::new(1000, &sig, &shorter, &mask)),
            ("offset", PlanKey::new(1000, &sig, &shifted, &mask)),
            ("strides", PlanKey::new(1000, &sig, &strided, &mask)),
        ] {
            assert!(get(&key).is_none(), "{what}: served another key's plan");
        }
    }
}
