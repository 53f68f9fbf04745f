"""Golden regression: the library's main paths give the numbers recorded in tests/golden/.

On the machine that recorded them (the same processor, jax, jaxlib and XLA flags) every array must
be equal bit for bit; elsewhere, equal to float tolerance, since XLA:CPU rounds differently on other
processors. ``MZ_JAX_RECORD_GOLDEN=1`` records them instead (tests/_golden.py says when).
"""

import json
import os

import numpy as np
import pytest
from _golden import CASES, GOLDEN_DIR, MACHINE_FILE, compute, machine

# Off the recording machine: a few ulps of float32, grown through a short training run.
RTOL, ATOL = 1e-3, 1e-5
RECORD = os.environ.get("MZ_JAX_RECORD_GOLDEN") == "1"


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_its_recording(name, tmp_path):
    computed = compute(name, tmp_path)
    path = GOLDEN_DIR / f"{name}.npz"
    if RECORD:
        np.savez_compressed(path, **computed)
        MACHINE_FILE.write_text(json.dumps(machine(), indent=2) + "\n")
        pytest.skip(f"recorded {len(computed)} arrays in {path}")
    with np.load(path) as data:
        recorded = {key: data[key] for key in data.files}
    same_machine = json.loads(MACHINE_FILE.read_text()) == machine()
    assert sorted(computed) == sorted(recorded)
    for key, expected in recorded.items():
        actual = computed[key]
        assert actual.shape == expected.shape, key
        assert actual.dtype == expected.dtype, key
        if same_machine or not np.issubdtype(expected.dtype, np.floating):
            np.testing.assert_array_equal(actual, expected, err_msg=key)
        else:
            np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=key)
