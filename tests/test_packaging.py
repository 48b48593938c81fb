"""A non-editable install ships every kernel source: build the wheel, install it into a fresh
virtual environment, and load every variant's source from the installed package (no GPU needed)."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    str(ROOT), "-w", str(out)], check=True, cwd=out)
    (whl,) = out.glob("cugemm-*.whl")
    return whl


def test_wheel_holds_every_kernel_source(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = [p for p in (ROOT / "kernels").rglob("*") if p.suffix in (".cu", ".cuh")]
    assert sources
    for p in sources:
        assert "cugemm/kernels/" + p.relative_to(ROOT / "kernels").as_posix() in names


def test_installed_wheel_finds_every_kernel(wheel, tmp_path):
    # install into an empty target directory and import from there, away from the source tree
    # (.ci/run repeats this with a fresh virtual environment and `pip install .`)
    site = tmp_path / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], check=True)
    code = ("import cugemm, cugemm.jit as j; "
            "assert 'site-packages' in str(j.KERNEL_DIR), j.KERNEL_DIR; "
            "n = [len(j.source(v)) for v in cugemm.variants()]; print(len(n), min(n))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(site)})
    assert r.returncode == 0, r.stderr
    count, shortest = map(int, r.stdout.split())
    assert count == len(__import__("cugemm").variants()) and shortest > 500
