"""The extension weft._weft for pyproject.toml's setuptools build, linked against an installed
libweft (its headers and libweft.so). Where libweft is: WEFT_PREFIX, else pkg-config's weft.pc,
else /usr/local. The library's directory goes into the extension's RUNPATH, so nothing else needs
setting at run time."""
import glob
import os
import subprocess

from setuptools import Extension, setup


def weft_prefix():
    if os.environ.get("WEFT_PREFIX"):
        return os.environ["WEFT_PREFIX"]
    try:
        out = subprocess.run(["pkg-config", "--variable=prefix", "weft"], capture_output=True,
                             text=True, check=True)
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return "/usr/local"


prefix = weft_prefix()
libdirs = [d for d in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64"),
                       os.path.join(prefix, "lib", "x86_64-linux-gnu")) if os.path.isdir(d)]
here = os.path.dirname(os.path.abspath(__file__))

setup(ext_modules=[Extension(
    "weft._weft",
    sources=sorted(os.path.relpath(p, here) for p in glob.glob(os.path.join(here, "src", "*.c"))),
    include_dirs=[os.path.join(prefix, "include")],
    library_dirs=libdirs,
    runtime_library_dirs=libdirs,
    libraries=["weft"],
    extra_compile_args=["-std=c11"],
)])
