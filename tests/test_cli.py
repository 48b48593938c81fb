"""The command line as a new user meets it, through subprocess: exit status and one-line messages
on stderr instead of tracebacks, on a machine with or without a GPU, with or without CuPy."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cugemm

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, block_cupy=False, input_=None, env=None):
    """Run `python -m cugemm ARGS` (block_cupy: as if CuPy were not installed)."""
    prelude = "import sys; sys.modules['cupy'] = None; " if block_cupy else ""
    code = prelude + "import sys, runpy; sys.argv = ['cugemm'] + sys.argv[1:]; runpy.run_module('cugemm', run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          input=input_, env=env or os.environ)


NO_GPU_ENV = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # a GPU machine looks like one without


def one_line_error(r, *words):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_version_and_usage_name():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"cugemm {cugemm.__version__}"
    r = cli("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: cugemm")


def test_unknown_variants_are_one_line_errors():
    one_line_error(cli("list", "--variants", "nosuchvariant"), "no variant matches 'nosuchvariant'")
    one_line_error(cli("compile", "--variants", "nosuchvariant"), "no variant matches", "list")


@pytest.mark.parametrize("spelling", ["sm_89", "sm89", "89", "8.9"])
def test_arch_spellings(spelling):
    r = cli("compile", "--arch", spelling, "--variants", "sgemm_naive_f32")
    assert r.returncode == 0, r.stderr
    assert "for sm_89" in r.stdout


def test_bad_arch_is_a_one_line_error():
    one_line_error(cli("compile", "--arch", "sm90x"), "is not an arch", "sm_89")


def test_list_is_compact_by_default_and_wide_on_request():
    narrow, wide = cli("list"), cli("list", "--wide")
    assert narrow.returncode == wide.returncode == 0
    assert max(map(len, narrow.stdout.splitlines())) <= 150  # the longest names plus five short columns
    assert "what it adds" in wide.stdout and "what it adds" not in narrow.stdout
    assert f"{len(cugemm.variants())} variants" in narrow.stdout


def test_list_json_into_a_closed_pipe():
    r = subprocess.run(f"{sys.executable} -m cugemm list --json | head -2", shell=True, capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("[") and r.stderr == ""


def test_bench_usage_errors_and_no_gpu():
    r = subprocess.run([sys.executable, "bench.py", "--shapes", "4096x4096"], capture_output=True,
                       text=True, cwd=ROOT)
    one_line_error(r, "'4096x4096' is not MxNxK")
    r = cli("bench", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: cugemm bench") and "--dtype" in r.stdout
    one_line_error(cli("bench", env=NO_GPU_ENV), "bench: no CUDA GPU found")


def test_without_cupy():
    """pip install . without an extra: list works, compile and bench say what to install."""
    assert cli("list", block_cupy=True).returncode == 0
    one_line_error(cli("compile", "--variants", "sgemm_naive_f32", block_cupy=True), "cugemm[cuda13]")
    one_line_error(cli("bench", block_cupy=True), "cugemm[cuda13]")
    code = ("import sys; sys.modules['cupy'] = None; import cugemm\n"
            "class A:\n  def __init__(s, shape): s.__cuda_array_interface__ = dict(shape=shape, typestr='<f4', "
            "data=(1 << 40, False), strides=None, version=3)\n"
            "try:\n  cugemm.run('sgemm_naive_f32', A((4, 4)), A((4, 4)))\nexcept RuntimeError as e:\n  print(e)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "needs CuPy" in r.stdout and "cugemm[cuda13]" in r.stdout, r.stderr


# ---- usage errors: one line, exit 2, and before any GPU check ---------------------------------
def test_no_command_lists_the_commands():
    """`python -m cugemm` alone: the commands, one line each, on stderr; exit 2 (nothing was done)."""
    r = cli()
    assert r.returncode == 2 and r.stdout == "" and "required" not in r.stderr
    for command in ("list", "compile", "bench", "tune", "explain"):
        assert f"\n  {command} " in r.stderr, r.stderr
    assert "--help" in r.stderr.splitlines()[-1]


@pytest.mark.parametrize("args,words", [
    (("list", "--bad"), ["unrecognized arguments: --bad", "--help"]),
    (("nosuchcommand",), ["invalid choice: 'nosuchcommand'", "--help"]),
    (("compile", "--workers", "0"), ["--workers", "0 is not a positive integer", "compile --help"]),
    (("compile", "--workers", "-3"), ["--workers", "-3 is not a positive integer"]),
    (("compile", "--workers", "two"), ["--workers", "'two' is not an integer"]),
    (("explain",), ["shape", "explain --help"]),
    (("bench", "--iters", "0"), ["--iters", "0 is not a positive integer", "bench --help"]),
    (("bench", "--warmup", "-1"), ["--warmup", "-1 is negative"]),
    (("bench", "--dtype", "f64"), ["--dtype", "invalid choice: 'f64'"]),
], ids=lambda x: " ".join(x) if isinstance(x, tuple) else None)
def test_argparse_errors_are_one_line(args, words):
    one_line_error(cli(*args, env=NO_GPU_ENV), *words)
    assert cli(*args).returncode == 2


@pytest.mark.parametrize("args,words", [
    (("explain", "4096x4096"), ["'4096x4096' is not MxNxK"]),
    (("explain", "64x64x64,128x128x128"), ["explain takes one shape"]),
    (("explain", "64x64x64", "--dtype", "f64"), ["--dtype 'f64' is not a type cugemm.matmul multiplies",
                                                 "f16, bf16, f32, tf32"]),
    (("explain", "64x64x64", "--layouts", "row"), ["--layouts", "not 'row'"]),
    (("tune", "--shapes", "64x64x64", "--dtype", "f64"), ["--dtype 'f64'"]),
    (("tune", "--shapes", "64x64x64", "--dtype", "f16", "f64"), ["--dtype 'f64'"]),
    (("tune", "--shapes", "64x64x64", "--variants", "nosuch"), ["no variant matches 'nosuch'"]),
    (("tune", "--shapes", "64x64x64", "--layouts", "row,x"), ["not 'row,x'"]),
    (("tune", "--sets", "nosuch"), ["unknown sweep 'nosuch'"]),
    (("tune",), ["give --shapes"]),
    (("bench", "--variants", "nosuch"), ["no f32 variant matches 'nosuch'"]),
    (("bench", "--shapes", "1x2"), ["'1x2' is not MxNxK"]),
], ids=lambda x: " ".join(x) if isinstance(x, tuple) else None)
def test_inputs_are_checked_before_the_gpu(args, words):
    """A wrong input is reported as such even where there is no GPU (here: GPUs hidden), never as
    the no-GPU message."""
    r = cli(*args, env=NO_GPU_ENV)
    one_line_error(r, *words)
    assert r.returncode == 2 and "GPU" not in r.stderr, r.stderr


def test_messages_keep_their_quotes():
    """The --layouts error ends with its closing quote (a KeyError's message keeps its own quotes
    too, without the ones str(KeyError) adds)."""
    r = cli("tune", "--shapes", "64x64x64", "--layouts", "row,x", env=NO_GPU_ENV)
    assert r.stderr.strip().endswith("not 'row,x'"), r.stderr
    r = cli("tune", "--sets", "nosuch", env=NO_GPU_ENV)
    assert r.stderr.startswith("cugemm: unknown sweep 'nosuch';"), r.stderr


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts").glob("*.py") if not p.name.startswith("_")))
def test_scripts_have_help(script):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], capture_output=True,
                       text=True, env={**os.environ, "CUPY_TF32": "1"})
    assert r.returncode == 0 and "usage:" in r.stdout, r.stderr


def test_device_check_fails_when_a_bench_fails(tmp_path):
    """scripts/device_check.sh reports a failing bench in its exit status (here: no GPU, so the
    bench exits 2 and the check exits 1 instead of 0)."""
    if cugemm.toolkit.have_gpu():
        pytest.skip("this machine has a GPU: the bench would pass")
    r = subprocess.run(["bash", "scripts/device_check.sh", "bench"], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "OUT": str(tmp_path), "BENCH_DTYPES": "f32"}, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bench f32: exit 2" in r.stdout


def test_compile_warms_cupy_cache_for_this_gpu(monkeypatch):
    """On a GPU machine, compile() also loads each variant compiled for the GPU's own chip through
    CuPy (the path cugemm.run takes), which fills CuPy's disk cache; other chips are left alone."""
    from cugemm import jit, toolkit

    loaded = []
    monkeypatch.setattr(toolkit, "have_gpu", lambda: True)
    monkeypatch.setattr(toolkit, "device_cc", lambda: 89)
    monkeypatch.setattr(jit, "get_function", lambda v, device_id=None: loaded.append(v.name))
    cugemm.compile("sgemm_naive_f32", arch="sm_89")
    assert loaded == ["sgemm_naive_f32"]
    cugemm.compile("sgemm_naive_f32", arch="sm_90")
    assert loaded == ["sgemm_naive_f32"]  # not this GPU's chip: nothing loaded
    cugemm.compile("sgemm_naive_f32", arch="sm_89", warm=False)
    assert loaded == ["sgemm_naive_f32"]
