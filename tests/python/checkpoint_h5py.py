#!/usr/bin/env python3
"""Reads a checkpoint of tests/mpi/io/checkpoint_run.cpp with h5py alone (no meshpp) and checks
that each dataset is the tensor's GLOBAL array, with its dim names as attributes.

    python3 checkpoint_h5py.py PREFIX      # reads PREFIX.adam.h5 and PREFIX.adam.ref

Exit status 77 (CTest: skipped) when h5py or numpy is not installed (Debian: python3-h5py).
"""
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"skipped: {e} (install Debian's python3-h5py)")
    sys.exit(77)

prefix = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)


def names(attribute):
    return [n.decode() if isinstance(n, bytes) else str(n) for n in attribute]


with h5py.File(prefix + ".adam.h5", "r") as f:
    check(f.attrs["format"] == b"meshpp checkpoint", "format attribute")
    i, j = np.meshgrid(np.arange(8), np.arange(12), indexing="ij")

    grid = f["variables/grid"]
    check(grid.shape == (8, 12) and grid.dtype == np.float32, f"grid is float32 [8, 12]: {grid.dtype} {grid.shape}")
    check(names(grid.attrs["dims"]) == ["rows", "cols"], f"grid dims {names(grid.attrs['dims'])}")
    want = (np.float32(0.5) * i.astype(np.float32) + np.float32(0.25) * j.astype(np.float32))
    check(np.array_equal(grid[...], want), "grid is the global array 0.5 i + 0.25 j")

    counts = f["variables/nested/counts"]
    check(counts.dtype == np.int32 and names(counts.attrs["dims"]) == ["cols"], "counts int32 [cols]")
    check(np.array_equal(counts[...], np.arange(12, dtype=np.int32) * 1000), "counts is 1000 j")

    replicated = f["variables/replicated"]
    check(np.array_equal(replicated[...], -1.5 * np.arange(8)), "replicated is -1.5 i")

    reference = np.fromfile(prefix + ".adam.ref", dtype=np.float32)[:96].reshape(8, 12)
    check(np.array_equal(f["variables/w"][...], reference), "w equals the weights the saving run gathered")

    optimizer = f["optimizer"]
    check(optimizer.attrs["kind"] == b"adam" and optimizer.attrs["steps"] == 3, "optimizer kind adam, 3 steps")
    slot = f["optimizer/slots/w"]
    check(slot.attrs["updates"] == 3 and slot["m"].shape == (8, 12) and slot["v"].shape == (8, 12),
          "Adam's m and v of w, [8, 12], 3 updates")
    check(bool(np.all(slot["v"][...] > 0)), "v is positive")
    check(f["scalars"].attrs["step"] == 3, "scalar step 3")

sys.exit(1 if failures else 0)
