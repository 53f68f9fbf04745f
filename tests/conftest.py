"""Test set-up: four forced host devices, so data-parallel code is tested in-process on a CPU."""

import os

# Must happen before jax is imported anywhere in the test process.
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
