"""Test set-up: four forced host devices, so data-parallel code is tested in-process on a CPU; XLA
compiling at LLVM optimisation level 1; one compilation cache for the session."""

import os
import shutil
import tempfile

# Must happen before jax is imported anywhere in the test process.
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
# Most of the suite's time is XLA building small programs that then run for milliseconds, and
# LLVM's optimisation pipeline is a large part of each build. Level 1 ran the suite in 626 s against
# 681 s at the default (quiet 2-core machine, one after the other). Level 0 (540 s) changed
# results: the ResNets' gradients came out NaN, because jnp.max's gradient divides by the count of
# elements equal to the maximum, and at level 0 none of the hidden state's elements compared equal
# to the maximum XLA had computed of them, so that count was 0. A level set in XLA_FLAGS is kept.
if "--xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=1"

# One persistent compilation cache for the whole session, in a fresh temporary directory shared by
# the xdist workers (they inherit this environment) and the subprocesses tests start (the CLI reads
# MZ_JAX_COMPILATION_CACHE): many tests compile the same small programs, and a cached program is
# the same compiled code, so results do not change. Nothing is written under the home directory.
_CREATED_CACHE = None
if "MZ_JAX_COMPILATION_CACHE" not in os.environ:
    _CREATED_CACHE = tempfile.mkdtemp(prefix="mz_jax_test_xla_")
    os.environ["MZ_JAX_COMPILATION_CACHE"] = _CREATED_CACHE

import jax  # noqa: E402  (after XLA_FLAGS above)

if os.environ["MZ_JAX_COMPILATION_CACHE"].lower() != "off":
    jax.config.update("jax_compilation_cache_dir", os.environ["MZ_JAX_COMPILATION_CACHE"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


def pytest_unconfigure(config):
    """The process that made the session's cache (the xdist controller) removes it at the end."""
    if _CREATED_CACHE is not None:
        shutil.rmtree(_CREATED_CACHE, ignore_errors=True)
