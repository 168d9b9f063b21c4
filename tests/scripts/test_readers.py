#!/usr/bin/env python3
"""The files `weft run` writes, opened with real readers: VTK's own XML PolyData reader
(vtkXMLPolyDataReader, what ParaView uses under its .pvd reader) and meshio's PLY reader.

A small scene (a sliding ball and a hanging 4 x 3 cloth) runs 4 frames every 2 with "ply" and
"vtk". Checked:
  - scene.pvd is a VTK Collection whose DataSets name, at each time (frame / 60 s, exactly as
    printed with 17 digits), every object as part 0 and 1 with name=; each file opens in VTK with
    the object's point count, the point-data arrays weft documents (particles: velocity,
    radius, id, angular_velocity; cloth: velocity, normal, and the 2 (nx-1)(ny-1) = 12 triangles
    of a 4 x 3 grid) and positions equal to the PLY's, bit for bit (both float32);
  - meshio reads every PLY: the particle file's point data radius, vx..vz, wx..wz and id, the
    cloth's triangles and nx..nz / vx..vz; the ball turns (wz < 0 rolling along +x).
Needs VTK's and meshio's Python modules (Debian: python3-vtk9, python3-meshio): when the Python
running this lacks them, it re-runs itself with /usr/bin/python3 (the distribution's, where
those packages install); without them there, it exits 77 (skipped). WEFT_CLI names the program.
"""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SCENE = """{"simulation": {"fps": 60, "substeps": 16, "frames": 4, "devices": "cpu"},
 "materials": [{"name": "rubber", "friction": 0.5}],
 "particles": [{"name": "ball", "center": [0, 0.05, 0], "half_extents": [0.05, 0.05, 0.05],
   "radius": 0.05, "velocity": [1, 0, 0], "material": "rubber"}],
 "cloths": [{"name": "sheet", "grid": {"size": [0.5, 0.5], "resolution": [4, 3]},
   "center": [0, 1, 0], "pins": [0, 3]}],
 "colliders": [{"name": "ground", "type": "plane", "friction": 0.5}],
 "outputs": {"every": 2, "formats": ["ply", "vtk"]}}
"""


def modules():
    try:
        import meshio  # noqa: F401
        from vtkmodules.vtkIOXML import vtkXMLPolyDataReader  # noqa: F401
        return True
    except ImportError:
        return False


def main():
    if not modules():
        other = "/usr/bin/python3"
        if os.environ.get("WEFT_READERS_REEXEC") != "1" and os.path.exists(other) and \
                os.path.realpath(sys.executable) != os.path.realpath(other):
            os.environ["WEFT_READERS_REEXEC"] = "1"
            os.execv(other, [other, *sys.argv])
        print("SKIP: VTK's or meshio's Python module is missing (python3-vtk9, python3-meshio)")
        return 77
    import meshio
    from vtkmodules.vtkIOXML import vtkXMLPolyDataReader
    from vtkmodules.util.numpy_support import vtk_to_numpy

    cli = os.environ.get("WEFT_CLI")
    if not cli:
        print("SKIP: WEFT_CLI is not set")
        return 77
    fails = checks = 0

    def check(cond, what):
        nonlocal fails, checks
        checks += 1
        if not cond:
            fails += 1
            print(f"  FAIL: {what}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as d:
        scene = os.path.join(d, "readers.json")
        with open(scene, "w") as f:
            f.write(SCENE)
        out = os.path.join(d, "out")
        r = subprocess.run([cli, "run", scene, "--out", out, "--quiet"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  FAIL: weft run exit {r.returncode}: {r.stderr}", file=sys.stderr)
            return 1
        counts = {"ball": 1, "sheet": 12}
        frames = [0, 2, 4]
        root = ET.parse(os.path.join(out, "scene.pvd")).getroot()
        check(root.tag == "VTKFile" and root.get("type") == "Collection", "a VTK Collection")
        sets = root.findall("./Collection/DataSet")
        check(len(sets) == 2 * len(frames), f"{len(sets)} DataSets, want {2 * len(frames)}")
        for k, ds in enumerate(sets):
            f = frames[min(k // 2, len(frames) - 1)]
            name = ["ball", "sheet"][k % 2]
            check(float(ds.get("timestep")) == f * (1.0 / 60.0), f"timestep of {ds.attrib}")
            check(ds.get("part") == str(k % 2) and ds.get("name") == name, f"part/name {ds.attrib}")
            path = os.path.join(out, ds.get("file"))
            check(ds.get("file") == f"{name}_{f:06d}.vtp", f"file {ds.get('file')}")
            rd = vtkXMLPolyDataReader()
            rd.SetFileName(path)
            rd.Update()
            pd = rd.GetOutput()
            check(pd.GetNumberOfPoints() == counts[name], f"{path}: {pd.GetNumberOfPoints()} points")
            arrays = {pd.GetPointData().GetArrayName(i) for i in range(pd.GetPointData().GetNumberOfArrays())}
            want = {"velocity", "radius", "id", "angular_velocity"} if name == "ball" else {"velocity", "normal"}
            check(arrays == want, f"{path}: arrays {sorted(arrays)}")
            if name == "sheet":
                check(pd.GetNumberOfPolys() == 12, f"{path}: {pd.GetNumberOfPolys()} triangles")
            else:
                check(pd.GetNumberOfVerts() == 1, f"{path}: {pd.GetNumberOfVerts()} vertex cells")
            # the same frame's PLY through meshio: the same float32 positions
            m = meshio.read(os.path.join(out, f"{name}_{f:06d}.ply"))
            pts = vtk_to_numpy(pd.GetPoints().GetData())
            check((m.points.astype("float32") == pts).all(), f"{path}: positions differ from the PLY")
            if name == "ball":
                for key in ("radius", "vx", "vy", "vz", "wx", "wy", "wz", "id"):
                    check(key in m.point_data, f"{name} PLY: meshio has no point data {key}")
                check(abs(float(m.point_data["radius"][0]) - 0.05) < 1e-7, "radius 0.05 m")
                om = vtk_to_numpy(pd.GetPointData().GetArray("angular_velocity"))
                check(float(m.point_data["wz"][0]) == float(om[0][2]), "wz: PLY and VTK agree")
                if f == 4:
                    check(float(m.point_data["wz"][0]) < -1.0, f"the ball turns: wz {m.point_data['wz']}")
            else:
                tri = [c for c in m.cells if c.type == "triangle"]
                check(tri and len(tri[0].data) == 12, "meshio: 12 triangles")
                for key in ("nx", "ny", "nz", "vx", "vy", "vz"):
                    check(key in m.point_data, f"{name} PLY: meshio has no point data {key}")
    print(f"readers: {checks} checks, " + ("ok" if fails == 0 else f"{fails} failed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
