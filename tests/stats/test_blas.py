"""One BLAS thread for the bootstrap's products: set inside, restored after, nested safely."""

from __future__ import annotations

import pytest

from debate.stats import _blas
from debate.stats._blas import one_blas_thread


def test_one_thread_inside_and_the_count_restored_after() -> None:
    controls = _blas._controls()
    if controls is None:
        pytest.skip("numpy's BLAS here is not a bundled OpenBLAS")
    get, put = controls
    original = get()
    put(2)
    try:
        with one_blas_thread():
            assert get() == 1
            with one_blas_thread():
                assert get() == 1
            assert get() == 1  # the inner block does not restore while the outer holds
        assert get() == 2
    finally:
        put(original)


def test_without_a_control_the_block_runs_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_blas, "_controls", lambda: None)
    ran = []
    with one_blas_thread():
        ran.append(True)
    assert ran == [True]
