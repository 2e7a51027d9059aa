//! The library's side of a differential test against PyTorch:
//! `scripts/differential.py` writes random cases (an op with its arguments,
//! a dtype, a view of a seeded base tensor), this runs each on the CPU and,
//! where there is one, the GPU, and the script compares every result, and
//! every error, with torch's on the same device.
//!
//! ```text
//! python3 scripts/differential.py gen DIR --cases 3000      # cases.json, data.bin
//! cargo run --release --example differential -- DIR         # ours.json, ours.bin
//! python3 scripts/differential.py check DIR                 # needs torch
//! ```
//!
//! Base data travels as little-endian f64 (floating dtypes) or i64 (the
//! others), exact for every value of every dtype; results come back the
//! same way, so the comparison sees exactly what the library produced.

use serde_json::{json, Value};
use std::path::Path;
use std::process::ExitCode;
use tensor_reduce::{with_dtype, DType, Device, Element, Tensor};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn is_float(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
}

/// The base tensor of a case from its slice of `data.bin`.
fn base_tensor(case: &Value, words: &[[u8; 8]], device: Device) -> AnyResult<Tensor> {
    let dtype = DType::from_name(case["dtype"].as_str().ok_or("dtype")?).ok_or("unknown dtype")?;
    let shape = usizes(&case["base_shape"])?;
    let start = case["data_offset"].as_u64().ok_or("data_offset")? as usize;
    let n: usize = shape.iter().product();
    let words = &words[start..start + n];
    let t = with_dtype!(dtype, T => {
        let v: Vec<T> = if is_float(dtype) {
            words.iter().map(|w| T::from_f64(f64::from_le_bytes(*w))).collect()
        } else {
            words.iter().map(|w| T::from_i64(i64::from_le_bytes(*w))).collect()
        };
        Tensor::from_vec(v, &shape)?
    });
    Ok(t.to_device(device)?)
}

fn usizes(v: &Value) -> AnyResult<Vec<usize>> {
    v.as_array()
        .ok_or("expected a list")?
        .iter()
        .map(|x| {
            x.as_u64()
                .map(|x| x as usize)
                .ok_or_else(|| "expected a size".into())
        })
        .collect()
}

fn isizes(v: &Value) -> AnyResult<Vec<isize>> {
    v.as_array()
        .ok_or("expected a list")?
        .iter()
        .map(|x| {
            x.as_i64()
                .map(|x| x as isize)
                .ok_or_else(|| "expected an index".into())
        })
        .collect()
}

fn int(v: &Value) -> AnyResult<isize> {
    Ok(v.as_i64().ok_or("expected an integer")? as isize)
}

/// Applies one view step, `[name, args...]`.
fn view(x: Tensor, step: &Value) -> AnyResult<Tensor> {
    let s = step.as_array().ok_or("view step")?;
    Ok(match s[0].as_str().ok_or("view name")? {
        "t" => x.t()?,
        "transpose" => x.transpose(int(&s[1])?, int(&s[2])?)?,
        "permute" => x.permute(&isizes(&s[1])?)?,
        "slice" => x.slice(int(&s[1])?, int(&s[2])?, int(&s[3])?, int(&s[4])? as usize)?,
        "expand" => x.expand(&usizes(&s[1])?)?,
        "unsqueeze" => x.unsqueeze(int(&s[1])?)?,
        other => return Err(format!("unknown view step {other}").into()),
    })
}

/// Runs the case's op: its outputs, in torch's order.
fn apply(x: &Tensor, case: &Value) -> tensor_reduce::Result<Vec<Tensor>> {
    let a = &case["args"];
    let dims: Vec<isize> = a["dims"]
        .as_array()
        .map(|d| d.iter().map(|v| v.as_i64().unwrap_or(0) as isize).collect())
        .unwrap_or_default();
    let keepdim = a["keepdim"].as_bool().unwrap_or(false);
    let correction = a["correction"].as_f64().unwrap_or(1.0);
    let dim = a["dim"].as_i64().map(|d| d as isize);
    let out_dtype = a["dtype"].as_str().and_then(DType::from_name);
    let one = |t: tensor_reduce::Result<Tensor>| t.map(|t| vec![t]);
    let two = |t: tensor_reduce::Result<(Tensor, Tensor)>| t.map(|(a, b)| vec![a, b]);
    match case["op"].as_str().unwrap_or("") {
        "sum" => match out_dtype {
            Some(d) => one(x.sum_dtype(&dims, keepdim, d)),
            None => one(x.sum(&dims, keepdim)),
        },
        "prod" => match out_dtype {
            Some(d) => one(x.prod_dtype(&dims, keepdim, d)),
            None => one(x.prod(&dims, keepdim)),
        },
        "mean" => match out_dtype {
            Some(d) => one(x.mean_dtype(&dims, keepdim, d)),
            None => one(x.mean(&dims, keepdim)),
        },
        "nansum" => match out_dtype {
            Some(d) => one(x.nansum_dtype(&dims, keepdim, d)),
            None => one(x.nansum(&dims, keepdim)),
        },
        "amax" => one(x.amax(&dims, keepdim)),
        "amin" => one(x.amin(&dims, keepdim)),
        "any" => one(x.any(&dims, keepdim)),
        "all" => one(x.all(&dims, keepdim)),
        "max_dim" => two(x.max_dim(dim.unwrap_or(0), keepdim)),
        "min_dim" => two(x.min_dim(dim.unwrap_or(0), keepdim)),
        "argmax" => one(x.argmax(dim, keepdim)),
        "argmin" => one(x.argmin(dim, keepdim)),
        "aminmax" => two(x.aminmax(&dims, keepdim)),
        "var" => one(x.var(&dims, correction, keepdim)),
        "std" => one(x.std(&dims, correction, keepdim)),
        "var_mean" => two(x.var_mean(&dims, correction, keepdim)),
        "std_mean" => two(x.std_mean(&dims, correction, keepdim)),
        "norm" => {
            // p = ±inf arrives as a string (JSON has no infinities).
            let p = a["p"].as_f64().or_else(|| a["p"].as_str()?.parse().ok());
            one(x.norm(p.unwrap_or(2.0), &dims, keepdim))
        }
        "logsumexp" => one(x.logsumexp(&dims, keepdim)),
        other => Err(tensor_reduce::Error::Unsupported(format!(
            "differential: no op {other}"
        ))),
    }
}

/// Appends a result's elements to `bin` as f64 or i64 words.
fn encode(t: &Tensor, bin: &mut Vec<u8>) -> AnyResult<()> {
    let dtype = t.dtype();
    with_dtype!(dtype, T => {
        for v in t.to_vec::<T>()? {
            if is_float(dtype) {
                bin.extend_from_slice(&v.to_f64().to_le_bytes());
            } else {
                bin.extend_from_slice(&v.to_i64().to_le_bytes());
            }
        }
    });
    Ok(())
}

fn run(dir: &Path) -> AnyResult<()> {
    let cases: Value = serde_json::from_slice(&std::fs::read(dir.join("cases.json"))?)?;
    let raw = std::fs::read(dir.join("data.bin"))?;
    let words: Vec<[u8; 8]> = raw.chunks_exact(8).map(|c| c.try_into().unwrap()).collect();
    let mut devices = vec![("cpu", Device::Cpu)];
    match Device::cuda(0) {
        Ok(d) => devices.push(("cuda", d)),
        Err(e) => eprintln!("differential: CPU only ({e})"),
    }
    let mut bin = Vec::new();
    let mut results = Vec::new();
    for case in cases.as_array().ok_or("cases.json holds a list")? {
        for &(name, device) in &devices {
            let mut x = base_tensor(case, &words, device)?;
            let mut view_error = None;
            for step in case["view"].as_array().into_iter().flatten() {
                match view(x.clone(), step) {
                    Ok(v) => x = v,
                    Err(e) => {
                        view_error = Some(e.to_string());
                        break;
                    }
                }
            }
            let entry = match view_error {
                Some(e) => json!({"id": case["id"], "device": name, "view_error": e}),
                None => match apply(&x, case) {
                    Err(e) => json!({"id": case["id"], "device": name, "error": e.to_string()}),
                    Ok(outs) => {
                        let mut described = Vec::new();
                        for t in &outs {
                            let offset = bin.len() / 8;
                            encode(t, &mut bin)?;
                            described.push(json!({
                                "dtype": t.dtype().to_string(),
                                "shape": t.shape(),
                                "offset": offset,
                            }));
                        }
                        json!({"id": case["id"], "device": name, "outputs": described})
                    }
                },
            };
            results.push(entry);
        }
    }
    std::fs::write(dir.join("ours.bin"), &bin)?;
    std::fs::write(dir.join("ours.json"), serde_json::to_vec(&results)?)?;
    println!(
        "differential: {} results in {}",
        results.len(),
        dir.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: differential DIR (holding cases.json and data.bin)");
        return ExitCode::from(2);
    };
    match run(Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("differential: {e}");
            ExitCode::FAILURE
        }
    }
}
