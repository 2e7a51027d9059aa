//! Compiled kernels on disk, keyed by a hash of everything that determines
//! the cubin. An entry stores the full key and a checksum; one that does not
//! match in every byte is recompiled and overwritten, never loaded.

use super::{fnv1a64, CompiledKernel};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"TRKERN01";

/// `$TENSOR_REDUCE_CACHE_DIR`, else `$XDG_CACHE_HOME/tensor-reduce`, else
/// `$HOME/.cache/tensor-reduce`; `None` disables the disk cache (also
/// when `TENSOR_REDUCE_CACHE_DIR` is set but empty).
pub fn dir() -> Option<PathBuf> {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(v) = std::env::var_os("TENSOR_REDUCE_CACHE_DIR") {
        return (!v.is_empty()).then(|| PathBuf::from(v));
    }
    non_empty("XDG_CACHE_HOME")
        .map(|p| p.join("tensor-reduce"))
        .or_else(|| non_empty("HOME").map(|p| p.join(".cache").join("tensor-reduce")))
}

/// The file an entry with `key` lives in.
pub fn path_for(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{:016x}.cubin", fnv1a64(key.as_bytes())))
}

fn encode(key: &str, k: &CompiledKernel) -> Vec<u8> {
    let mut body = Vec::new();
    let mut put = |bytes: &[u8]| {
        body.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        body.extend_from_slice(bytes);
    };
    put(key.as_bytes());
    put(&(k.lowered_names.len() as u64).to_le_bytes());
    for n in &k.lowered_names {
        put(n.as_bytes());
    }
    put(&k.cubin);
    let mut out = Vec::with_capacity(body.len() + 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&fnv1a64(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

fn decode(key: &str, bytes: &[u8]) -> Option<CompiledKernel> {
    let body = bytes.strip_prefix(MAGIC)?;
    let (sum, body) = body.split_at_checked(8)?;
    if u64::from_le_bytes(sum.try_into().ok()?) != fnv1a64(body) {
        return None;
    }
    let mut rest = body;
    let mut take = || -> Option<&[u8]> {
        let (len, tail) = rest.split_at_checked(8)?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
        let (item, tail) = tail.split_at_checked(len)?;
        rest = tail;
        Some(item)
    };
    if take()? != key.as_bytes() {
        return None;
    }
    let count = u64::from_le_bytes(take()?.try_into().ok()?);
    let mut lowered_names = Vec::new();
    for _ in 0..count.min(64) {
        lowered_names.push(String::from_utf8(take()?.to_vec()).ok()?);
    }
    let cubin = take()?.to_vec();
    (rest.is_empty() && lowered_names.len() as u64 == count && !cubin.is_empty()).then_some(
        CompiledKernel {
            cubin,
            lowered_names,
        },
    )
}

/// The entry for `key`, if present and intact.
pub fn load(key: &str) -> Option<CompiledKernel> {
    let bytes = std::fs::read(path_for(&dir()?, key)).ok()?;
    decode(key, &bytes)
}

/// Writes the entry atomically (temporary file, then rename). Best
/// effort: a cache that cannot be written only costs a recompile.
pub fn store(key: &str, k: &CompiledKernel) {
    let Some(dir) = dir() else { return };
    let _ = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        let path = path_for(&dir, key);
        let tmp = dir.join(format!(
            ".{}.{}.{:?}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&tmp, encode(key, k))?;
        std::fs::rename(&tmp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    })();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_reject_damage() {
        let k = CompiledKernel {
            cubin: vec![1, 2, 3, 4, 5],
            lowered_names: vec!["_Z1a".into(), "_Z1b".into()],
        };
        let bytes = encode("key", &k);
        assert_eq!(decode("key", &bytes), Some(k.clone()));
        assert_eq!(decode("other key", &bytes), None);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(decode("key", &bad), None, "flipped byte {i}");
        }
        assert_eq!(decode("key", &bytes[..bytes.len() - 1]), None);
    }
}
