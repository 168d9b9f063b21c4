#!/usr/bin/env python3
"""Two MPI ranks, each running a weft particle solver for its half of a pile, exchanging halos
through mpi4py with weft buffers as the message memory.

    mpirun -n 2 env PYTHONPATH=build/python /usr/bin/python3 examples/python/mpi_halo.py
        [--device cpu|cuda] [--seconds 0.5] [--cuda-aware] [--no-halo]

Rank 0 owns a block of grains at x < 0, rank 1 one at x > 0; they start side by side and slump
against each other. Every 1/480 s (a frame of 8 substeps) each rank sends the state of its grains
within the halo width of the other's nearest grain to the other, which holds them as kinematic ghosts (extra particles whose inverse
mass is 0, moved into place between frames): its own grains feel the neighbour's across the
boundary, and the neighbour computes the reverse. (A kinematic ghost weighs as a wall in the
contact's reduced mass, so the pair damping differs from a one-solver run: this shows the
exchange, not bitwise equality; weft's own multi-device solver does that in one process.)

Messages: each rank packs the halo rows into a weft.Buffer and hands the Buffer itself to
mpi4py. On CPU devices it is host memory, read through the buffer protocol without a copy. On a
CUDA device with --cuda-aware (a CUDA-aware MPI) mpi4py takes the device Buffer through the CUDA
array interface; without it the rows are staged through a pinned host Buffer (wf_copy, ordered on
weft's streams) before MPI sees them.

At the end rank 0 gathers every grain and reports the deepest overlap between grains of the two
ranks: with the halo exchange it stays a fraction of a radius (contacts hold); with --no-halo the
blocks pass through each other.
"""
import argparse

import numpy as np
from mpi4py import MPI

import weft

R = 0.01  # grain radius, m
HALO = 3 * R  # own grains this close to the neighbour's nearest one go to it as ghosts
RATE = 480  # exchanges per simulated second: a ghost is kinematic between two of them


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--cuda-aware", action="store_true")
    ap.add_argument("--no-halo", action="store_true")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    if comm.size != 2:
        raise SystemExit("mpi_halo.py: run with 2 ranks (mpirun -n 2 ...)")
    rank, other = comm.rank, 1 - comm.rank
    side = -1.0 if rank == 0 else 1.0
    dev = weft.device(a.device)

    # both ranks keep positions relative to one origin, so rows can be exchanged as they are
    # a "frame" is one exchange: 8 substeps of 1/3840 s (the 64 a 1/60 s frame of the scenes)
    ps = weft.Particles(device=dev, substeps=8, frame_dt=1 / RATE, name=f"rank{rank}",
                        origin_given=True, origin=[0.0, 0.0, 0.0])
    _, n_own = ps.emit(center=[side * 0.1, 0.2, 0], half_extents=[0.1 - R, 0.2, 0.05],
                       radius=R, spacing=2 * R, jitter=0.1 * R, seed=rank + 1)
    ghosts = n_own  # room for every own grain's ghost at the neighbour
    park = np.zeros((ghosts, 4), np.float32)
    park[:, 0] = -side * 50.0 + np.arange(ghosts) * 4 * R  # far away, out of everyone's reach
    park[:, 1], park[:, 3] = 10.0, R
    ps.add(park, np.zeros((ghosts, 4), np.float32))  # inverse mass 0: kinematic
    ps.add_collider(type="plane", name="ground")
    ps.step(1)
    view = ps.partition_view()  # the solver's own state on its device (rows: own, then ghosts)
    stream = view["stream"]

    send = weft.Buffer((ghosts, 8), "float32", device=dev)
    recv = weft.Buffer((ghosts, 8), "float32", device=dev)
    staged = not a.cuda_aware and dev.is_cuda
    if staged:
        host_send = weft.Buffer((ghosts, 8), "float32", device="cpu", pinned=True)
        host_recv = weft.Buffer((ghosts, 8), "float32", device="cpu", pinned=True)

    frames = int(round(a.seconds * RATE))
    for _ in range(frames):
        ps.step(1)
        stream.synchronize()  # the frame is done: its state may be read
        if a.no_halo:
            continue
        pos, vel = view["pos"].download(), view["vel"].download()
        own_pos, own_vel = pos[:n_own], vel[:n_own]
        # the neighbour's extent towards us: rank 0 needs rank 1's smallest x, and the reverse
        edge = own_pos[:, 0].max() if rank == 0 else own_pos[:, 0].min()
        other_edge = comm.sendrecv(float(edge), dest=other, source=other)
        near = own_pos[:, 0] > other_edge - HALO if rank == 0 else own_pos[:, 0] < other_edge + HALO
        rows = np.concatenate([own_pos[near], own_vel[near]], axis=1)
        k = len(rows)
        packed = np.zeros((ghosts, 8), np.float32)
        packed[:k] = rows
        send.upload(packed)
        k_other = comm.sendrecv(k, dest=other, source=other)
        if staged:  # through pinned host memory
            host_send.copy_from(send)
            comm.Sendrecv([host_send, k * 8, MPI.FLOAT], other,
                          recvbuf=[host_recv, k_other * 8, MPI.FLOAT], source=other)
            recv.copy_from(host_recv)
        else:  # the weft Buffers themselves (host memory, or CUDA-aware MPI on device memory)
            send.synchronize()
            comm.Sendrecv([send, k * 8, MPI.FLOAT], other,
                          recvbuf=[recv, k_other * 8, MPI.FLOAT], source=other)
        got = recv.download()[:k_other]
        gpos = park.copy()
        gvel = np.zeros((ghosts, 4), np.float32)
        gpos[:k_other] = got[:, :4]
        gvel[:k_other, :3] = got[:, 4:7]  # w stays 0: kinematic
        view["pos"].upload(gpos, offset=n_own * 16, stream=stream)
        view["vel"].upload(gvel, offset=n_own * 16, stream=stream)

    pos, _ = ps.download()
    everyone = comm.gather(pos[:n_own], root=0)
    if rank == 0:
        left, right = everyone
        d = np.linalg.norm(left[:, None, :3] - right[None, :, :3], axis=2)
        overlap = (left[:, None, 3] + right[None, :, 3] - d).max()
        crossed = int((left[:, 0] > 2 * R).sum() + (right[:, 0] < -2 * R).sum())
        print(f"{len(left) + len(right)} grains on 2 ranks ({dev}), {a.seconds} s, {frames} exchanges, "
              f"{'no halo' if a.no_halo else 'halo exchange'}: deepest overlap between the ranks' "
              f"grains {overlap / R:.2f} radius, grains more than a diameter into the other half "
              f"{crossed}")


if __name__ == "__main__":
    main()
