//! The host side of `reduce_kernel`: PyTorch's `gpu_reduce_kernel` and
//! `launch_reduce_kernel`, for any op.

use super::block_cache::Block;
use super::kernel;
use super::params::{Buffers, ReduceArgs};
use super::plan_cache::{self, PlanKey};
use super::{driver_error, CudaStorage};
use crate::cuda::plan::{LaunchPlan, ReducePlan, SHORT_ROWS_STAGE_ALIGN};
use crate::iter::TensorIterator;
use crate::reduce::{OpParams, Signature};
use crate::tensor::storage::Storage;
use crate::{DType, Error, Result, Tensor};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Staging buffer and semaphores for `global_reduce`, one per (device,
/// stream): launches that share one are ordered by their stream, while two
/// streams reducing at once would race on a shared one. They only grow;
/// semaphores are zeroed when allocated and every kernel leaves them at
/// zero. A workspace lives as long as the process and its buffers keep
/// their stream alive, so a stream handle is never reused under it.
#[derive(Default)]
struct Workspace {
    staging: Option<CudaSlice<u8>>,
    semaphores: Option<CudaSlice<u8>>,
}

fn workspace(ordinal: usize, stream: &CudaStream) -> Arc<Mutex<Workspace>> {
    type Key = (usize, usize);
    static WORKSPACES: OnceLock<Mutex<HashMap<Key, Arc<Mutex<Workspace>>>>> = OnceLock::new();
    let mut map = WORKSPACES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry((ordinal, stream.cu_stream() as usize))
        .or_default()
        .clone()
}

/// Grows `slot` to at least `bytes` (rounded up to a power of two so a
/// sequence of growing requests reallocates rarely).
fn ensure(
    slot: &mut Option<CudaSlice<u8>>,
    stream: &Arc<CudaStream>,
    ordinal: usize,
    bytes: usize,
    zeroed: bool,
) -> Result<()> {
    if bytes == 0 || slot.as_ref().is_some_and(|s| s.len() >= bytes) {
        return Ok(());
    }
    let bytes = bytes.next_power_of_two().max(256);
    // Dropping the old buffer frees it in stream order, after the launches
    // already queued on this stream that use it.
    *slot = None;
    let buf = if zeroed {
        stream.alloc_zeros::<u8>(bytes)
    } else {
        // SAFETY: the staging buffer is always written before it is read.
        unsafe { stream.alloc::<u8>(bytes) }
    }
    .map_err(|e| driver_error(ordinal, bytes, "allocating reduce workspace", e))?;
    *slot = Some(buf);
    Ok(())
}

/// Where a call's plan comes from.
enum Planned {
    /// An earlier call's, for the same layout.
    Kept(Arc<ReducePlan>),
    /// None yet: the iterator to plan from.
    Unplanned(Box<TensorIterator>),
}

/// Plans `sig` over `iter` for device `ordinal` with the registers of its
/// loaded module `k`, and keeps the plan for the next call of `key`'s
/// layout. The module is loaded (compiled on first use) before planning:
/// the planner counts its waves in the CTAs its kernels' registers allow.
fn plan_and_keep(
    ordinal: usize,
    key: &PlanKey<'_>,
    iter: &TensorIterator,
    sig: &Signature,
    k: &kernel::LoadedKernel,
) -> Result<Arc<ReducePlan>> {
    let props = super::device_props(ordinal)?;
    Ok(plan_cache::insert(
        key,
        ReducePlan::for_kernels(iter, sig, &props, &k.registers)?,
    ))
}

/// The plan [`reduce`] runs for `sig` over the dims `mask` marks of
/// `input`, on its device: the kept one, or a new one (loading the module).
pub(crate) fn device_plan(
    input: &Tensor,
    mask: &[bool],
    sig: &Signature,
) -> Result<Arc<ReducePlan>> {
    let storage = CudaStorage::of(input)?;
    let ordinal = storage.ordinal();
    let key = PlanKey::new(ordinal, sig, input, mask);
    if let Some(plan) = plan_cache::get(&key) {
        return Ok(plan);
    }
    let iter = TensorIterator::reduce_op(input, mask, sig.output)?;
    let k = kernel::loaded(ordinal, sig)?;
    plan_and_keep(ordinal, &key, &iter, sig, &k)
}

/// Runs `sig` over the dims `mask` marks of `input`, on the GPU.
pub(crate) fn reduce(
    input: &Tensor,
    mask: &[bool],
    sig: &Signature,
    params: OpParams,
) -> Result<(Tensor, Option<Tensor>)> {
    let storage = CudaStorage::of(input)?;
    let ordinal = storage.ordinal();
    // A plan kept from an earlier call of the same layout, or the iterator
    // to plan from (built first: a layout it rejects is that error, not
    // out of memory).
    let key = PlanKey::new(ordinal, sig, input, mask);
    let planned = match plan_cache::get(&key) {
        Some(plan) => Planned::Kept(plan),
        None => Planned::Unplanned(Box::new(TensorIterator::reduce_op(
            input, mask, sig.output,
        )?)),
    };
    let out_dtype = sig.output;
    let n_out = match &planned {
        Planned::Kept(plan) => plan.iter.num_output_elements(),
        Planned::Unplanned(iter) => iter.num_output_elements(),
    };
    let stream = storage.stream.clone();
    // The result lives on the input's stream, where the launches write it.
    // Allocated before planning: a result too large for the device is out
    // of memory, whatever the plan would have been.
    let out = CudaStorage::uninit_on(&stream, out_dtype, n_out)?;
    // The second output (indices, max, mean) has the first's layout, in its
    // own element size.
    let second_dtype = sig.second_output();
    let mut out2 = second_dtype
        .map(|d| CudaStorage::uninit_on(&stream, d, n_out))
        .transpose()?;
    let k = kernel::loaded(ordinal, sig)?;
    let plan = match planned {
        Planned::Kept(plan) => plan,
        Planned::Unplanned(iter) => plan_and_keep(ordinal, &key, &iter, sig, &k)?,
    };
    let launches = &plan.launches;

    let acc_buf = if plan.needs_acc_buffer {
        Some(Block::alloc(
            &stream,
            (plan.acc_buffer_bytes as usize).max(1),
        )?)
    } else {
        None
    };

    let workspace = workspace(ordinal, &stream);
    let mut ws = workspace.lock().unwrap_or_else(|e| e.into_inner());
    let staging_bytes = launches.iter().map(|l| l.staging_bytes).max().unwrap_or(0);
    let semaphore_bytes = launches
        .iter()
        .map(|l| l.semaphore_bytes)
        .max()
        .unwrap_or(0);
    ensure(
        &mut ws.staging,
        &stream,
        ordinal,
        staging_bytes as usize,
        false,
    )?;
    ensure(
        &mut ws.semaphores,
        &stream,
        ordinal,
        semaphore_bytes as usize,
        true,
    )?;

    let mut out = out;
    {
        let (input_base, _in_guard) = storage.buf.device_ptr(&stream);
        let (output_base, _out_guard) = out.buf.device_ptr_mut(&stream);
        let (output2_base, _out2_guard) = match &mut out2 {
            Some(o) => {
                let (p, g) = o.buf.device_ptr_mut(&stream);
                (p, Some(g))
            }
            None => (0, None),
        };
        let (acc_base, _acc_guard) = match &acc_buf {
            Some(b) => {
                let (p, g) = b.device_ptr(&stream);
                (p, Some(g))
            }
            None => (0, None),
        };
        let (staging, _st_guard) = match &ws.staging {
            Some(b) => {
                let (p, g) = b.device_ptr(&stream);
                (p, Some(g))
            }
            None => (0, None),
        };
        let (semaphores, _sem_guard) = match &ws.semaphores {
            Some(b) => {
                let (p, g) = b.device_ptr(&stream);
                (p, Some(g))
            }
            None => (0, None),
        };
        let bufs = Buffers {
            input_base,
            // The whole allocation: a cached block may exceed the elements.
            input_end: input_base + storage.buf.len() as u64,
            output_base,
            output2_base,
            acc_base,
            staging,
            semaphores,
        };
        for l in launches {
            let args = ReduceArgs::new(
                l,
                out_dtype.size_in_bytes(),
                second_dtype.map_or(0, DType::size_in_bytes),
                sig.acc.size_in_bytes(),
                &bufs,
                params,
            )?;
            let f = k.function(l)?;
            check_alignment(&args, l, input.dtype())?;
            let cfg = LaunchConfig {
                grid_dim: (l.grid[0], l.grid[1], l.grid[2].max(1)),
                block_dim: (l.block[0], l.block[1], l.block[2].max(1)),
                shared_mem_bytes: l.shared_memory_bytes,
            };
            let mut builder = stream.launch_builder(f);
            builder.arg(&args);
            // SAFETY: the arguments mirror the kernel's parameter (checked by
            // static_asserts in the source); every pointer in them is live on
            // this stream until the launch completes (buffers are freed in
            // stream order), and the plan's shape covers exactly the
            // iterator's elements.
            unsafe { builder.launch(cfg) }.map_err(|e| {
                driver_error(ordinal, 0, &format!("launching {}", kernel::label(sig)), e)
            })?;
        }
    }
    drop(ws);
    drop(acc_buf);
    let flat =
        |o: CudaStorage, dtype| Tensor::from_storage(Storage::Cuda(Arc::new(o)), &[n_out], dtype);
    Ok((
        flat(out, out_dtype),
        out2.zip(second_dtype).map(|(o, d)| flat(o, d)),
    ))
}

/// The vector loads need the alignment the planner assumed; refuse a launch
/// that would fault rather than trust it blindly.
fn check_alignment(args: &ReduceArgs, l: &LaunchPlan, input: DType) -> Result<()> {
    let c = &l.config;
    if !c.vectorize_input && c.output_vec_size > 1 && c.lanes_per_row == 0 {
        let align = c.output_vec_size as u64 * input.size_in_bytes() as u64;
        // Ragged columns align each lane's loads down from its inputs,
        // which stays inside the allocation where its base is aligned.
        let loads_from = if c.ragged_columns {
            args.src - l.iter.data_offset(TensorIterator::INPUT)
        } else {
            args.src
        };
        if loads_from % align != 0 {
            return Err(Error::Unsupported(format!(
                "plan vectorises outputs by {} but the input address is only {}-byte aligned",
                c.output_vec_size,
                1u64 << loads_from.trailing_zeros().min(63)
            )));
        }
    }
    if c.lanes_per_row != 0 {
        let align = u64::from(c.row_vec_size) * input.size_in_bytes() as u64;
        // Ragged rows align each row's loads down from its start, which
        // only the allocation's base needs to be aligned for.
        let loads_from = if c.ragged_rows {
            args.src - l.iter.data_offset(TensorIterator::INPUT)
        } else {
            args.src
        };
        // Packed rows: a lane's output vector is the rows of its one load.
        let packed = c.packed_rows()
            && c.lanes_per_row == 1
            && c.num_inputs.checked_mul(c.output_vec_size) == Some(c.row_vec_size);
        if loads_from % align != 0 || (c.output_vec_size != 1 && !packed) {
            return Err(Error::Unsupported(format!(
                "plan loads rows {} inputs at a time but the input address is only {}-byte aligned",
                c.row_vec_size,
                1u64 << loads_from.trailing_zeros().min(63)
            )));
        }
    }
    if c.stage_rows && args.src % SHORT_ROWS_STAGE_ALIGN != 0 {
        return Err(Error::Unsupported(format!(
            "plan copies spans of rows {SHORT_ROWS_STAGE_ALIGN} bytes at a time but the input address is only {}-byte aligned",
            1u64 << args.src.trailing_zeros().min(63)
        )));
    }
    if c.vectorize_input && l.iter.num_reduce_dims() > 1 {
        // Several reduced dims have no misaligned head to read.
        let align = u64::from(c.input_vec_size) * input.size_in_bytes() as u64;
        if args.src % align != 0 {
            return Err(Error::Unsupported(format!(
                "plan loads {} inputs at a time across reduced dims but the input address is only {}-byte aligned",
                c.input_vec_size,
                1u64 << args.src.trailing_zeros().min(63)
            )));
        }
    }
    if c.vectorize_input && c.output_vec_size != 1 {
        return Err(Error::Unsupported(
            "plan vectorises both input and output".into(),
        ));
    }
    Ok(())
}
