# torch_setup: the environment bench/mnist_torch.py and bench/transformer_torch.py set from
# their command line before torch is imported (imported first by both).
#
# --threads n (1 under --ddp): OPENBLAS_NUM_THREADS and OMP_NUM_THREADS. Debian's torch does its
# products in the system BLAS (OpenBLAS), which starts its own threads unless told: without
# this, "1 thread" used both cores (22 ms of CPU per 11 ms 1024^3 product).
# --wait-policy passive|active: OMP_WAIT_POLICY, how torch's OpenMP threads wait between
# parallel regions (left to the runtime without it). With 2 threads on a 2-core machine,
# passive is PyTorch's best: its MNIST SGD step at batch 100 ran 40-44k examples/s with it and
# 9.5-21k without (25k at 1 thread), as idle threads spinning take the core the other one needs.
import os
import sys


def _value_of(flag, default):
    if flag in sys.argv:
        return sys.argv[sys.argv.index(flag) + 1]
    return default


def configure():
    """Sets the environment from sys.argv; returns (threads, wait_policy or None)."""
    threads = 1 if "--ddp" in sys.argv else int(_value_of("--threads", "1"))
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(threads)
    policy = _value_of("--wait-policy", None)
    if policy is not None:
        os.environ["OMP_WAIT_POLICY"] = policy.upper()
    return threads, policy


def describe(threads, policy):
    """How one process runs: '1 process x 2 threads' and, if set, ', OMP_WAIT_POLICY=PASSIVE'."""
    how = f"1 process x {threads} threads"
    return how + (f", OMP_WAIT_POLICY={policy.upper()}" if policy else "")
