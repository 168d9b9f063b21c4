"""Shared fixtures of the Python tests (run by ctest, label `python`, with PYTHONPATH pointing at
build/python). Every case is small: it must take well under 3 s on 2 shared cores."""
import os
import pathlib

import pytest

import weft

SOURCE = pathlib.Path(os.environ.get("WEFT_SOURCE_DIR", pathlib.Path(__file__).parents[2]))


def has_cuda():
    return any(d.is_cuda for d in weft.devices())


@pytest.fixture
def scenes():
    return SOURCE / "scenes"


@pytest.fixture
def cpu():
    return weft.device("cpu:0")


cuda_only = pytest.mark.skipif(not has_cuda(), reason="no CUDA device (the GPU machine runs these)")
