//! The public reductions, with torch's semantics. Each entry point resolves
//! dims and dtypes, builds the [`TensorIterator`] once, and hands it to the
//! backend of the tensor's device.

mod sum;
