"""PyTorch's side of examples/quickstart.rs: the same expressions, printed by
torch itself.

Run on a machine with torch: `python3 scripts/quickstart_torch.py > torch.txt`,
then diff against `cargo run --release --example quickstart`; only the first
line, the device, differs (scripts/gpu-bundle.sh's runner does this diff).
To add a case, add one `show("...")` line here and the same expression there.
"""
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
session = {"torch": torch}


def show(expr):
    """One session step: the expression, then its value."""
    print(f">>> {expr}")
    print(eval(expr, session))


def setup(statement):
    """A setup statement, echoed as typed and run on the session's device."""
    print(f">>> {statement}")
    name = statement.split("=", 1)[0].strip()
    exec(statement, session)
    session[name] = session[name].to(dev)


print(f"device: {dev}")

setup("x = torch.arange(120, dtype=torch.float32).reshape(2, 3, 4, 5) / 4")
show("x[0, 0]")
show("x.sum(1, keepdim=True)")
show("x.sum()")
show("x.sum(-1)")
show("x.sum((0, 2))")
show("x.sum((-1, 1), keepdim=True)")
show("x.transpose(1, 3).sum(1)")
show("x.mean((0, 2))")
show("x.amax(1)")
show("x.amin((0, -1), keepdim=True)")

setup("h = torch.ones(4096, dtype=torch.float16)")
show("h.sum()")
show("h.sum(dtype=torch.float32)")

setup("i = torch.arange(12, dtype=torch.int32).reshape(3, 4)")
show("i")
show("i.sum(0)")
show("i.prod(1)")
show("i.prod(1, dtype=torch.float64)")
show("i.amax(0)")
show("i.any(1)")
show("i.all(1)")
show("h.mean()")

setup("n = torch.tensor([1.0, float('nan'), 2.5])")
show("n.sum()")
show("n.nansum()")
show("n.amax()")

setup("m = torch.tensor([[1.0, 3.0, 3.0], [float('nan'), 0.5, 2.0]])")
show("m.max(1).values")
show("m.max(1).indices")
show("m.argmin(1)")
show("m.argmax()")
show("m.aminmax(dim=0).max")

show("x.var(2)")
show("torch.var_mean(x, (0, 2), correction=0)[1]")
show("x.std(1)")
show("torch.linalg.vector_norm(x, 1, (0, 2))")
show("torch.linalg.vector_norm(x, float('inf'))")
show("torch.linalg.vector_norm(x, 2, -1)")
show("x.logsumexp((1, 3))")

setup("r = torch.randn(2, 3, 4, 5)")
show("r.sum(1, keepdim=True).shape")
