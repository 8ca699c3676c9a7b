#!/usr/bin/python3
# mnist_torch: the README's MNIST network (bench/training.cpp, examples/mnist/mnist.cpp) trained by
# PyTorch on the same machine: the peer a user would compare meshpp's step with. Same network
# (x[batch, 784] w1[784, 1024] -> relu -> w2[1024, 10] -> softmax cross-entropy, mean over the
# batch, no biases), same batch, same optimizer and rate (SGD 0.1, Adam 1e-3), float32.
#
#   /usr/bin/python3 bench/mnist_torch.py --batch 100 --optimizer adam --threads 1
#   /usr/bin/python3 bench/mnist_torch.py --batch 100 --optimizer adam --ddp 2
#
# --threads n: one process, torch.set_num_threads(n) (--wait-policy passive|active: its
# OpenMP threads' OMP_WAIT_POLICY, bench/torch_setup.py). --ddp p: p processes of one thread each,
# DistributedDataParallel over gloo on this machine, each with batch / p examples. Prints one
# JSON line: {"bench": "torch", "case": ..., "examples_per_second": ...}, the median over
# steps timed for about 3 s after a warm-up (the slowest process's time under DDP).
import argparse
import json
import os
import statistics
import time


# the environment from --threads and --wait-policy, before torch is imported (torch_setup.py)
import torch_setup  # noqa: E402

torch_setup.configure()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PIXELS, HIDDEN, CLASSES = 28 * 28, 1024, 10


def make_step(batch, optimizer, ddp):
    g = torch.Generator().manual_seed(7)
    x = torch.rand(batch, PIXELS, generator=g)
    y = torch.arange(batch) * 7 % CLASSES
    l1 = (6.0 / (PIXELS + HIDDEN)) ** 0.5
    l2 = (6.0 / (HIDDEN + CLASSES)) ** 0.5
    model = torch.nn.Sequential(
        torch.nn.Linear(PIXELS, HIDDEN, bias=False), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, CLASSES, bias=False))
    with torch.no_grad():
        model[0].weight.uniform_(-l1, l1, generator=g)
        model[2].weight.uniform_(-l2, l2, generator=g)
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step


def timed_steps(step, barrier=lambda: None, reduce_max=lambda t: t):
    for _ in range(5):
        step()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < 3.0 or len(times) < 5:
        barrier()
        t0 = time.perf_counter()
        step()
        times.append(reduce_max(time.perf_counter() - t0))
    return statistics.median(times)


def ddp_worker(rank, world, args, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    step = make_step(args.batch // world, args.optimizer, True)

    def reduce_max(t):
        v = torch.tensor([t])
        dist.all_reduce(v, op=dist.ReduceOp.MAX)
        return v.item()

    median = timed_steps(step, dist.barrier, reduce_max)
    if rank == 0:
        out.put(median)
    dist.barrier()
    # not destroy_process_group(): a worker once spun in it for 20 minutes after its parent
    # had printed and gone, taking a core from everything run after it
    os._exit(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--wait-policy", choices=["passive", "active"], default=None)
    p.add_argument("--ddp", type=int, default=0)
    args = p.parse_args()
    if args.ddp:
        # a port free now (a fixed one hung a run that followed another within a second)
        import socket
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
        ctx = mp.get_context("spawn")
        out = ctx.SimpleQueue()
        mp.spawn(ddp_worker, args=(args.ddp, args, out), nprocs=args.ddp, join=True)
        median, how = out.get(), f"DDP gloo, {args.ddp} processes x 1 thread"
    else:
        torch.set_num_threads(args.threads)
        median, how = timed_steps(make_step(args.batch, args.optimizer, False)), \
            torch_setup.describe(args.threads, args.wait_policy)
    name = f"mnist model {'Adam' if args.optimizer == 'adam' else 'SGD'} step, batch {args.batch}"
    print(json.dumps({"bench": "torch", "case": name, "torch": how, "torch_version": torch.__version__,
                      "step_s": median, "examples_per_second": args.batch / median}), flush=True)


if __name__ == "__main__":
    main()
