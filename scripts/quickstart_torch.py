"""PyTorch's side of examples/quickstart.rs: the same calls, printed the same way.

Run on a machine with torch: `python3 scripts/quickstart_torch.py > torch.txt`,
then diff against `cargo run --release --example quickstart` (the first line,
the device, and the last line, whose input comes from our own seeded RNG, differ
by design).
"""
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"


def show(label, t):
    vals = ", ".join(f"{v:.4f}" for v in t.flatten().double().tolist())
    dtype = {torch.float32: "f32", torch.float16: "f16", torch.int64: "i64"}[t.dtype]
    print(f"{label}: shape {list(t.shape)} dtype {dtype} values [{vals}]")


print(f"device: {dev}")
x = (torch.arange(120, dtype=torch.float32, device=dev).reshape(2, 3, 4, 5) / 10)
show("x.sum(1, keepdim=True)", x.sum(1, keepdim=True))
show("x.sum()", x.sum())
show("x.sum(-1)", x.sum(-1))
show("x.sum((0, 2))", x.sum((0, 2)))
show("x.sum((-1, 1), keepdim=True)", x.sum((-1, 1), keepdim=True))
show("x.transpose(1, 3).sum(1)", x.transpose(1, 3).sum(1))
h = torch.ones(4096, dtype=torch.float16, device=dev)
show("torch.ones(4096, dtype=torch.float16).sum()", h.sum())
show("torch.ones(4096, dtype=torch.float16).sum(dtype=torch.float32)", h.sum(dtype=torch.float32))
i = torch.arange(12, dtype=torch.int32, device=dev).reshape(3, 4)
show("torch.arange(12, dtype=torch.int32).reshape(3, 4).sum(0)", i.sum(0))
r = torch.randn(2, 3, 4, 5, device=dev)
print(f"randn(2,3,4,5, seed 0).sum(1, keepdim=True) has shape {list(r.sum(1, keepdim=True).shape)}")
