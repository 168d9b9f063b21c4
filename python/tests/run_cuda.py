"""The CUDA cases of the Python package (test_cuda.py) as a test of their own, ctest label gpu:
exits 77 (skipped) where weft sees no CUDA device, and otherwise fails when a case that needs
only one GPU was skipped (a torch without CUDA, say), so that a GPU run cannot pass while its
cases silently did not run. Skips that depend on the machine stay skips: CuPy not installed,
fewer than two GPUs. Prints each case's outcome."""
import pathlib
import sys

import pytest

import weft

try:  # after weft: the order that aborted before libweft exported only its API (docs/python.md)
    import torch  # noqa: F401
except ImportError:
    pass

ALLOWED_SKIPS = ("needs two CUDA devices", "could not import 'cupy'")


class Outcomes:
    def __init__(self):
        self.ran, self.bad_skips = 0, []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            self.ran += 1
        if report.skipped:
            reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
            if not any(a in reason for a in ALLOWED_SKIPS):
                self.bad_skips.append(f"{report.nodeid}: {reason}")


def main():
    if not any(d.is_cuda for d in weft.devices()):
        print("run_cuda: weft sees no CUDA device: skipped")
        return 77
    here = pathlib.Path(__file__).parent
    out = Outcomes()
    rc = pytest.main(["-q", "-rA", "-p", "no:cacheprovider", str(here / "test_cuda.py")],
                     plugins=[out])
    print(f"run_cuda: {out.ran} CUDA cases passed, {len(out.bad_skips)} skipped that should run")
    for s in out.bad_skips:
        print("  skipped:", s)
    if rc != 0:
        return int(rc)
    return 1 if out.bad_skips or out.ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
