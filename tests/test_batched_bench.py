"""scripts/batched_bench.py, issue 26's batched judge set: attention-shaped (batch 8-256, M and N
64-4096, K 64-256), none of its batches in the batched tuning sets (`tune --batched`). No GPU needed."""
import sys
from pathlib import Path

from cugemm.bench.measure import BATCHED_SWEEPS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import batched_bench  # noqa: E402


def test_the_judge_batches_are_attention_shaped():
    assert len(batched_bench.BATCHED) >= 10
    for count, M, N, K, _ in batched_bench.BATCHED:
        assert 8 <= count <= 256 and 64 <= M <= 4096 and 64 <= N <= 4096 and 64 <= K <= 256
    assert {tr for *_, tr in batched_bench.BATCHED} == {True, False}  # q @ k.T and p @ v forms


def test_nothing_was_tuned_on_them():
    tuned = {b for name in BATCHED_SWEEPS for b in BATCHED_SWEEPS[name]()}
    assert len(tuned) > 60  # the sets really were read
    judged = {(count, M, N, K) for count, M, N, K, _ in batched_bench.BATCHED}
    assert not judged & tuned
