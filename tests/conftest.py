"""Test set-up: four forced host devices, so data-parallel code is tested in-process on a CPU; XLA's
cheapest compile mode; one compilation cache for the session."""

import os
import shutil
import subprocess
import sys
import tempfile

# Must happen before jax is imported anywhere in the test process.
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
# Most of the suite's time is XLA building small programs that then run for milliseconds. XLA's
# cheapest mode builds them in about half the time: LLVM at optimisation level 0 with its expensive
# passes off, and the CPU backend's elemental emitters rather than its fusion emitters. Measured on
# a quiet 2-core machine, cache off: a CartPole iteration compiled in 3.7 s against 8.8 s at LLVM
# level 1 (the set-up before), a Stochastic MuZero one in 10.2 s against 21.9 s; the suite ran in
# 589-690 s against 916 s. Whatever of these XLA_FLAGS already names is kept. The elemental
# emitters are the older code path, which a later jaxlib may drop, and XLA aborts the process on a
# flag it does not know: that flag is probed first. At level 0 a ResNet's gradient through
# min_max_normalize comes out NaN (tests/_xla.py says why), so the tests that check such gradients
# compile those programs at level 1. The subprocesses tests start (the CLI, the guides) inherit the
# flags.
CHEAP_COMPILE = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")
PROBED_FIRST = ("--xla_cpu_use_fusion_emitters=false",)


def _xla_accepts(flag: str) -> bool:
    """Whether this jaxlib knows ``flag``: XLA aborts the process on an unknown one."""
    probe = subprocess.run(
        [sys.executable, "-c", "import jax; jax.devices()"],
        env={**os.environ, "XLA_FLAGS": flag},
        capture_output=True,
    )
    return probe.returncode == 0


for _flag in CHEAP_COMPILE + PROBED_FIRST:
    if _flag.split("=")[0] in os.environ["XLA_FLAGS"]:
        continue
    if _flag not in PROBED_FIRST or _xla_accepts(_flag):
        os.environ["XLA_FLAGS"] += " " + _flag

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
