"""Particles and cloth built in code, against closed forms: free fall under the solver's
integrator, and a collider posed between frames moving what rests on it by exactly its
displacement."""
import numpy as np
import pytest

import weft

G = 9.81


def test_free_fall_matches_the_discrete_closed_form(cpu):
    # Symplectic Euler (v += g dt, then x += v dt) from rest: after N substeps
    # y = y0 - g dt^2 N (N + 1) / 2 exactly in real arithmetic. The positions are floats relative
    # to the particle's origin (10 m, docs/precision.md), each of the N = 1920 additions rounds by
    # at most half an ulp of |y - y0| <= 1.3 m (6e-8): a bound of 1.2e-4 m; 2e-4 m leaves margin
    # yet is 3x smaller than the continuous ½ g t² differs by (g dt t / 2 = 6.4e-4 m), so the test
    # tells the integrator apart.
    p = weft.Particles(device=cpu, substeps=64, frame_dt=1 / 60, gravity=[0, -G, 0])
    p.add(np.array([[0, 10, 0, 0.05]], np.float32), np.array([[0, 0, 0, 1.0]], np.float32))
    p.step(30)
    pos, vel = p.download()
    n, dt = 30 * 64, np.float32(1 / 60) / 64
    assert abs(pos[0, 1] - (10 - G * dt * dt * n * (n + 1) / 2)) < 2e-4
    assert abs(vel[0, 1] - (-G * dt * n)) < 1e-4  # n additions of g dt (float): ~1e-5
    st = p.stats()
    assert st["count"] == 1 and st["substeps"] == n




def settle_on_plane(cpu, lift):
    p = weft.Particles(device=cpu, substeps=64)
    mat = p.add_material(stiffness=1e4, restitution=0.0, friction=0.5)
    r = 0.05
    p.add(np.array([[0, r, 0, r]], np.float32), np.array([[0, 0, 0, 1 / 0.5]], np.float32),
          material=mat)
    ground = p.add_collider(type="plane", restitution=0.0, name="floor")
    p.step(30)
    if lift:
        p.set_collider_pose(ground, time=30 / 60, position=[0, lift, 0])
    p.step(90)
    return p.download()[0][0, 1]


def test_collider_pose_set_between_frames_moves_the_rest_height(cpu):
    # A 0.5 kg particle at rest on the plane y = 0 sits at r - m g / k. Posing the plane at
    # y = lift (a translation of its pivot, no recapture) must move the rest height by exactly
    # lift: after 1.5 s the critically damped contact (restitution 0, period 2π sqrt(m/k) = 44 ms)
    # has settled to far below 1e-5 m, which bounds the float error of the heights (~1e-7) too.
    base = settle_on_plane(cpu, 0.0)
    lifted = settle_on_plane(cpu, 0.02)
    assert abs(base - (0.05 - 0.5 * G / 1e4)) < 1e-5
    assert abs((lifted - base) - 0.02) < 1e-5


def test_cloth_settings_and_errors(cpu):
    with pytest.raises(KeyError, match="unknown key 'colour'"):
        weft.Cloth.grid(device=cpu, colour="red")
    with pytest.raises(ValueError, match="'springs', 'xpbd'"):
        weft.Cloth.grid(device=cpu, integrator="rk4")
    with pytest.raises(weft.Error) as e:  # the solver's own message names the cloth and field
        weft.Cloth.grid(device=cpu, name="sheet", material={"stretch_modulus": -3})
    assert "sheet" in str(e.value) and "stretch_modulus" in str(e.value)
    c = weft.Cloth.grid(device=cpu, resolution=[4, 3], size=[0.3, 0.2], integrator="xpbd")
    assert c.count == 12 and c.triangles().shape == (12, 3)
    assert c.pin("top") == 4


def test_cloth_copy_positions_into_a_buffer(cpu):
    c = weft.Cloth.grid(device=cpu, resolution=[4, 4])
    c.step(2)
    buf = weft.Buffer((16, 4), "float32", device=cpu)
    c.copy_positions(buf)
    pos, _ = c.download()
    local = np.asarray(buf)  # the solver's own positions: relative to the cloth's origin (0, 1, 0)
    assert np.allclose(local[:, :3] + [0, 1, 0], pos[:, :3], atol=1e-6)


def test_particles_over_two_cpu_devices_bitwise_one(cpu):
    # weft/particles.h: the state after N frames is bitwise that of one partition, for any
    # number of partitions. Tolerance: none.
    weft.cpu_devices_ensure(2)

    def run(devices):
        p = weft.Particles(device=devices, substeps=16)
        p.emit(center=[0, 0.3, 0], half_extents=[0.15, 0.1, 0.1], radius=0.02, spacing=0.04,
               jitter=0.002, seed=3)
        p.add_collider(type="plane")
        p.step(10)
        return p.download()

    (p1, v1), (p2, v2) = run("cpu:0"), run(["cpu:0", "cpu:1"])
    assert np.array_equal(p1, p2) and np.array_equal(v1, v2)


def test_free_cloth_mesh_falls_like_a_point(cpu):
    # An unpinned sheet given as arrays, at rest (springs at their rest length, no wind, no drag)
    # falls as one body: every vertex follows the symplectic Euler free fall
    # y = y0 - g dt^2 N (N + 1) / 2. Relative to the cloth's origin (5 m) the positions are
    # floats of magnitude <= 1.3 m: N = 480 roundings of at most 6e-8 m bound the error by 3e-5 m.
    verts = np.array([[0, 5, 0], [0.2, 5, 0], [0, 5, 0.2], [0.2, 5, 0.2]], np.float32)
    tris = np.array([[0, 2, 1], [1, 2, 3]], np.uint32)
    c = weft.Cloth.mesh(verts, tris, device=cpu, name="tile", substeps=16)
    assert c.count == 4 and np.array_equal(c.triangles(), tris)
    c.step(30)
    pos, _ = c.download()
    n, dt = 30 * 16, np.float32(1 / 60) / 16
    assert np.abs(pos[:, 1] - (5 - G * dt * dt * n * (n + 1) / 2)).max() < 3e-5
    assert np.abs(pos[:, [0, 2]] - verts[:, [0, 2]]).max() < 1e-6  # nothing pushes sideways
    e = c.energy()
    assert e["elastic"] < 1e-12  # springs never stretched


def settle_on(cpu, frames=120, **collider):
    p = weft.Particles(device=cpu, substeps=64)
    mat = p.add_material(stiffness=1e4, restitution=0.0, friction=0.5)
    p.add(np.array([[0, 0.05, 0, 0.05]], np.float32),
          np.array([[0, 0, 0, 1 / 0.5]], np.float32), material=mat)
    p.add_collider(restitution=0.0, **collider)
    p.step(frames)
    return p.download()[0][0, 1]


def test_mesh_and_keyframed_colliders_from_python(cpu):
    # A closed box mesh whose top face is y = 0 holds the particle where the plane y = 0 does
    # (the distance to that face is exactly the height above it; 1e-6 m allows for the mesh
    # query's different float path). Keyframes lifting the plane by 0.02 m between 0.5 s and
    # 0.75 s lift the rest height by 0.02 m (settled: see the pose test).
    base = settle_on(cpu, type="plane")
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 0) for z in (-1, 1)], np.float32)
    # vertex index = 4 x + 2 y + z over {0, 1}: the six faces, counter-clockwise from outside
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.uint32)
    on_mesh = settle_on(cpu, type="mesh", name="block", vertices=v, triangles=tris)
    assert abs(on_mesh - base) < 1e-6
    keyed = settle_on(cpu, type="plane", keys=[
        {"time": 0.0, "position": [0, 0, 0]},
        {"time": 0.5, "position": [0, 0, 0]},
        {"time": 0.75, "position": [0, 0.02, 0]}])
    assert abs((keyed - base) - 0.02) < 1e-5
    with pytest.raises(TypeError, match="both vertices and triangles"):
        settle_on(cpu, type="mesh", vertices=v)


def test_cloth_state_round_trip_and_params(cpu):
    # set_state of a state downloaded relative to the origin (and its clock) continues bitwise
    # like the original (weft/cloth.h: the checkpoint restore's promise); world positions go
    # through a float subtraction, so only closely. A wind set between frames moves the cloth.
    a = weft.Cloth.grid(device=cpu, resolution=[6, 6], name="a")
    a.pin("top")
    a.step(5)
    pos, vel = a.download(local=True)
    wpos, wvel = a.download()
    b = weft.Cloth.grid(device=cpu, resolution=[6, 6], name="b")
    b.pin("top")
    b.set_state(pos, vel, time=5 / 60, substeps=5 * 16, local=True)
    w = weft.Cloth.grid(device=cpu, resolution=[6, 6], name="w")
    w.pin("top")
    w.set_state(wpos, wvel, time=5 / 60, substeps=5 * 16)
    for c in (a, b, w):
        c.step(5)
    assert np.array_equal(a.download()[0], b.download()[0])
    assert np.allclose(a.download()[0], w.download()[0], atol=1e-5)
    # the same cloth with and without a wind along +z set after 5 frames
    c, d = (weft.Cloth.grid(device=cpu, resolution=[6, 6], material={"drag": 1.0}, name=n)
            for n in ("c", "d"))
    for x in (c, d):
        x.pin("top")
        x.step(5)
    c.set_params(wind=[0, 0, 5.0])
    assert c.download()[0].tobytes() == d.download()[0].tobytes()  # nothing ran yet
    c.step(10)
    d.step(10)
    assert c.download()[0][:, 2].mean() > d.download()[0][:, 2].mean() + 1e-3  # blown along +z
