"""Scenes and worlds from Python: validation messages identical to the C API's, stepping,
statistics, and checkpoint save/resume continuing bitwise (weft/world.h's promise)."""
import numpy as np
import pytest

import weft

SMALL_FLAG = {"cloths[0].grid.resolution": [12, 8]}


def test_validation_messages_are_the_c_apis(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"particles": [{"radus": 1}],\n "simulation": {"fps": -1}}')
    with pytest.raises(weft.Error) as e:
        weft.validate(bad)
    lines = str(e.value).splitlines()
    assert e.value.status_name == "WF_ERR_PARSE"
    # every message, each naming file:line:column and the key path (scene.h's format)
    assert lines == [
        f"{bad}:1:17: particles[0].radus: unknown key (did you mean 'radius'?)",
        f"{bad}:2:17: simulation.fps: expected a number > 0, got -1",
    ]
    with pytest.raises(weft.Error) as e:
        weft.Scene.load(tmp_path / "missing.json")
    assert e.value.status_name == "WF_ERR_IO" and "missing.json" in str(e.value)


def test_overrides_are_validated_like_the_file(scenes):
    with pytest.raises(weft.Error, match=r"cloths\[0\]\.grid\.resolution"):
        weft.Scene.load(scenes / "flag.json", overrides={"cloths[0].grid.resolution": [0, 8]})
    sc = weft.Scene.load(scenes / "flag.json", overrides=["simulation.frames=7"])
    assert sc.frames == 7 and sc.cloth_count == 1 and '"frames": 7' in sc.to_json()


def test_world_steps_and_checkpoint_resumes_bitwise(scenes, tmp_path):
    sc = weft.Scene.load(scenes / "flag.json", overrides=SMALL_FLAG)
    w = weft.World(sc, device="cpu")
    assert w.object_count == 1 and w.collider_names == ["ground", "pole"]
    obj = w.object(0)
    assert obj["kind"] == "cloth" and obj["point_count"] == 96 and obj["triangles"].shape[1] == 3
    w.step(5)
    w.save(tmp_path / "ck.wfck")
    w.step(5)
    w.check()
    want_pos, want_vel = w.download(0)
    st = w.stats()
    assert st["frame"] == 10 and st["vertex_count"] == 96
    assert abs(st["time"] - 10 / 60) < 1e-12

    again = weft.World(sc, device="cpu")
    again.load_checkpoint(tmp_path / "ck.wfck")
    assert again.frame == 5
    again.step(5)
    pos, vel = again.download(0)
    assert np.array_equal(pos, want_pos) and np.array_equal(vel, want_vel)


def test_checkpoint_of_another_scene_is_refused_with_the_c_message(scenes, tmp_path):
    w = weft.World(weft.Scene.load(scenes / "flag.json", overrides=SMALL_FLAG), device="cpu")
    w.save(tmp_path / "ck.wfck")
    other = weft.Scene.load(scenes / "flag.json",
                            overrides={**SMALL_FLAG, "simulation.gravity": [0, -1.62, 0]})
    w2 = weft.World(other, device="cpu")
    with pytest.raises(weft.Error) as e:
        w2.load_checkpoint(tmp_path / "ck.wfck")
    assert "simulation.gravity[1]" in str(e.value)
    w2.load_checkpoint(tmp_path / "ck.wfck", allow_changes=True)
    assert w2.frame == 0


def test_particle_scene_world(scenes):
    sc = weft.Scene.load(scenes / "granular_column.json",
                         overrides={"particles[0].half_extents": [0.05, 0.1, 0.05]})
    w = weft.World(sc, device="cpu")
    w.step(3)
    pos, vel = w.download(0)
    assert pos.shape == (250, 4) and np.isfinite(pos).all()
    assert (pos[:, 3] == np.float32(0.01)).all()  # w: the radius
    force, torque = w.collider_force(0)
    assert len(force) == 3 and len(torque) == 3


GRAIN = {"particles[0].half_extents": [0.011, 0.011, 0.011], "particles[0].center": [0, 0.1, 0],
         "particles[0].jitter": 0}


def grain_height(scenes, lift, extra=None):
    w = weft.World(weft.Scene.load(scenes / "granular_column.json",
                                   overrides={**GRAIN, **(extra or {})}), device="cpu")
    assert w.object(0)["point_count"] == 1
    w.step(60)
    if lift:
        w.set_collider_pose(0, time=1.0, position=[0, lift, 0])
    w.step(120)
    return float(w.download(0)[0][0, 1])


def test_world_collider_pose_between_frames(scenes):
    # One sand grain settles on the ground; posing the ground 0.05 m up between frames (in every
    # solver of the world, no recapture) moves its rest height by 0.05 m (settled: 2 s of a
    # contact with period ~ 2 ms; float heights ~1e-8).
    base, lifted = grain_height(scenes, 0.0), grain_height(scenes, 0.05)
    assert abs((lifted - base) - 0.05) < 1e-6
    with pytest.raises(weft.Error) as e:  # the penetration watchdog cannot follow a pose
        grain_height(scenes, 0.05, {"simulation.max_penetration": 0.01})
    assert e.value.status_name == "WF_ERR_UNSUPPORTED"
    assert "simulation.max_penetration" in str(e.value)
