"""XLA options for the test programs that tests/conftest.py's cheapest compile mode gets wrong.

At LLVM optimisation level 0 the gradient of a ResNet's hidden state through ``min_max_normalize``
comes out NaN: ``jnp.max``'s gradient divides by the count of elements equal to the maximum, and at
level 0 none of the elements compared equal to the maximum XLA had computed of them, so the count
was 0. At XLA's default level, which users' programs get, and at level 1 the count is right. A test
that checks such gradients compiles its program with ``jax.jit(..., compiler_options=LEVEL_1)``.
"""

LEVEL_1 = {"xla_backend_optimization_level": 1}
