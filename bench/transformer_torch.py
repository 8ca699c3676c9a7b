#!/usr/bin/python3
# transformer_torch: examples/transformer's character language model (bench/transformer.cpp's
# step: forward, backward, Adam) trained by PyTorch on the same machine, the peer a user would
# compare meshpp's step with. The same network at the example's default sizes, layer by layer
# (include/meshpp/nn/transformer.hpp, attention.hpp, layer_norm.hpp, dense.hpp, embedding.hpp):
#
#   x = tokens[ids] + positions            embedding [vocab 64, d_model 128], positions
#                                           [seq 128, d_model], both normal(0, 1 / sqrt(d_model))
#   2 blocks, pre-normalisation, no dropout (bench/transformer uses block_options{}: rate 0):
#     x = x + wo(attention(layer_norm(x)))  q, k, v: d_model -> 4 heads x 32, no biases (one
#                                           [3 d_model, d_model] product); scores q k / sqrt(32),
#                                           the full [batch, heads, seq, seq] product under the
#                                           causal mask (position i attends to 0..i), softmax
#                                           over the keys; wo: 4 x 32 -> d_model, no bias
#     x = x + contract(relu(expand(layer_norm(x))))   d_model -> d_ff 512 -> d_model, biases
#   logits = unembed(layer_norm(x))         d_model -> vocab, no bias, not tied to the tokens
#   loss = mean cross-entropy over batch x seq of the next characters
#   Adam (foreach), rate 1e-3, betas (0.9, 0.999), epsilon 1e-8; layer norms epsilon 1e-5,
#   gamma 1, beta 0; weights Glorot-uniform, biases 0: 428 544 parameters, as meshpp's (the
#   JSON's "parameters"). The fused q, k, v product, the mask added inside baddbmm and the
#   foreach Adam are PyTorch's faster forms of the same arithmetic (the plain form, three
#   products, masked_fill and the default Adam, took 5-10% longer in a first measurement here):
#   the losses of the two forms agree exactly from the same weights.
#
# Vocab 64 is the King James text's 63 characters padded to a multiple of 8, as the example
# computes it (bench/transformer.cpp fixes it). The data are random ids of the same shape (a
# timing bench: what is learnt does not change the work), drawn once; bench/transformer makes
# its ids each step, a few microseconds of its 0.1-0.2 s step.
#
#   /usr/bin/python3 bench/transformer_torch.py --threads 1
#   /usr/bin/python3 bench/transformer_torch.py --ddp 2
#
# --threads n: one process, torch.set_num_threads(n) (--wait-policy passive|active: its
# OpenMP threads' OMP_WAIT_POLICY, bench/torch_setup.py), batch 32. --ddp p: p processes of one
# thread each, DistributedDataParallel over gloo on this machine, each with batch / p sequences
# (meshpp's data layout at p ranks: batch 32 split 16 a rank). Prints one JSON line:
# {"bench": "torch", "case": ..., "tokens_per_second": ..., "cores": ...}, the median over steps
# timed for about 5 s after a warm-up (the slowest process's time under DDP); "cores" is the
# processes times the threads, the meshpp ranks it compares with.
import argparse
import json
import math
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
from torch import nn  # noqa: E402

VOCAB = 64  # 63 characters of the King James text, padded to a multiple of 8


class Block(nn.Module):
    """mp::nn::transformer_block: pre-norm attention and ReLU feed-forward, no dropout."""

    def __init__(self, d_model, heads, d_ff, seq):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        # wq, wk, wv [d_model, heads, d_k] as one [3 d_model, d_model] product (as
        # nn.MultiheadAttention's in_proj and GPT-2's c_attn: one gemm instead of three, the
        # same parameters), wo [heads, d_v, d_model]; no biases, as meshpp's
        self.wqkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-5)
        self.expand = nn.Linear(d_model, d_ff)
        self.contract = nn.Linear(d_ff, d_model)
        # added to the scores: -inf where the key's position is after the query's. A plain
        # attribute, not a buffer: DDP would broadcast a buffer every step
        self.causal = torch.zeros(seq, seq).masked_fill(
            torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        # Glorot-uniform as meshpp's, each of wq, wk, wv its own [d_model, d_model] fan
        nn.init.uniform_(self.wqkv.weight, -math.sqrt(3.0 / d_model), math.sqrt(3.0 / d_model))
        for w in (self.wo, self.expand, self.contract):
            nn.init.xavier_uniform_(w.weight)
            if w.bias is not None:
                nn.init.zeros_(w.bias)

    def attention(self, x):
        b, l, d = x.shape
        h, k = self.heads, self.d_k
        qkv = self.wqkv(x).view(b, l, 3, h, k).permute(2, 0, 3, 1, 4)  # [3, b, h, l, k]
        q = (qkv[0] * (1.0 / math.sqrt(k))).reshape(b * h, l, k)
        keys, values = qkv[1].reshape(b * h, l, k), qkv[2].reshape(b * h, l, k)
        # the whole [b h, l, l] product, the mask added in the same call (as
        # F.multi_head_attention_forward does), then softmax over the keys
        s = torch.baddbmm(self.causal, q, keys.transpose(1, 2))
        o = torch.bmm(torch.softmax(s, dim=-1), values).view(b, h, l, k)
        return self.wo(o.transpose(1, 2).reshape(b, l, d))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.contract(F.relu(self.expand(self.norm2(x))))


class LanguageModel(nn.Module):
    """examples/transformer/transformer.hpp's language_model."""

    def __init__(self, layers, d_model, heads, d_ff, seq):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Parameter(torch.empty(seq, d_model))
        self.blocks = nn.ModuleList(Block(d_model, heads, d_ff, seq) for _ in range(layers))
        self.final_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.unembed = nn.Linear(d_model, VOCAB, bias=False)
        nn.init.normal_(self.tokens.weight, 0.0, 1.0 / math.sqrt(d_model))
        nn.init.normal_(self.positions, 0.0, 1.0 / math.sqrt(d_model))
        nn.init.xavier_uniform_(self.unembed.weight)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.final_norm(x))


def make_step(args, batch, ddp, seed=7):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB - 1, (batch, args.seq), generator=g)
    targets = torch.randint(0, VOCAB - 1, (batch, args.seq), generator=g)
    model = LanguageModel(args.layers, args.d_model, args.heads, args.d_ff, args.seq)
    parameters = sum(p.numel() for p in model.parameters())
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    # foreach: the update as a few multi-tensor ops rather than a loop of small ones per
    # parameter (the same arithmetic; faster here, so PyTorch is not held back by its default)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                           foreach=True)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(ids).view(-1, VOCAB), targets.view(-1))
        loss.backward()
        opt.step()

    return step, parameters


def timed_steps(step, barrier=lambda: None, reduce_max=lambda t: t):
    for _ in range(3):
        step()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < 5.0 or len(times) < 5:
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
    step, parameters = make_step(args, args.batch // world, True, seed=7 + rank)

    def reduce_max(t):
        v = torch.tensor([t])
        dist.all_reduce(v, op=dist.ReduceOp.MAX)
        return v.item()

    median = timed_steps(step, dist.barrier, reduce_max)
    if rank == 0:
        out.put((median, parameters))
    dist.barrier()
    # not destroy_process_group(): a worker once spun in it for 20 minutes after its parent
    # had printed and gone (bench/mnist_torch.py)
    os._exit(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=512)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--wait-policy", choices=["passive", "active"], default=None)
    p.add_argument("--ddp", type=int, default=0)
    args = p.parse_args()
    if args.d_model % args.heads or (args.ddp and args.batch % args.ddp):
        p.error("--d-model must be a multiple of --heads, and --batch of --ddp")
    if args.ddp:
        # a port free now (a fixed one hung a run that followed another within a second)
        import socket
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
        ctx = mp.get_context("spawn")
        out = ctx.SimpleQueue()
        mp.spawn(ddp_worker, args=(args.ddp, args, out), nprocs=args.ddp, join=True)
        (median, parameters), how = out.get(), f"DDP gloo, {args.ddp} processes x 1 thread"
        cores = args.ddp
    else:
        torch.set_num_threads(args.threads)
        step, parameters = make_step(args, args.batch, False)
        median, how = timed_steps(step), torch_setup.describe(args.threads, args.wait_policy)
        cores = args.threads
    name = (f"transformer layers {args.layers} d_model {args.d_model} batch {args.batch} "
            f"seq {args.seq}")
    print(json.dumps({"bench": "torch", "case": name, "torch": how, "torch_version": torch.__version__,
                      "step_s": median, "examples_per_second": args.batch / median,
                      "tokens_per_second": args.batch * args.seq / median, "cores": cores,
                      "parameters": parameters}), flush=True)


if __name__ == "__main__":
    main()
