"""The training state as the bytes a checkpoint holds, on the host.

Typed PRNG keys become their raw ``uint32`` data (orbax stores plain arrays) and back
(:func:`to_saveable`, :func:`from_saveable`), in the layout orbax stores (:func:`to_orbax`,
:func:`from_orbax`); :func:`to_host` copies a leaf out of reach of a later
donating step; :func:`state_digest` is the SHA-256 content hash saved beside each checkpoint and
:func:`nonfinite_leaves` names the leaves holding a NaN or an infinity. Used by
:mod:`mz_jax.run.checkpoint`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import numpy as np


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _key_data(x: Any) -> Any:
    if isinstance(x, jax.ShapeDtypeStruct):
        data = jax.eval_shape(jax.random.key_data, x)
        return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=x.sharding)
    return jax.random.key_data(x)


def to_saveable(state: Any) -> Any:
    """Typed PRNG keys become their raw uint32 data (orbax stores plain arrays); works on abstract
    (``jax.ShapeDtypeStruct``) states too."""
    return jax.tree.map(lambda x: _key_data(x) if _is_key(x) else x, state)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def orbax_tree(tree: Any) -> Any:
    """``tree`` with every NamedTuple as a dict of its fields less those that are None.

    orbax stores a NamedTuple's fields by name, and a None field as an entry of its own; a state
    that gains an optional field (None unless an option is on, like the actor's εz-greedy carry)
    would then no longer restore the checkpoints written before it existed. Without the None
    entries a run that does not use the option saves and restores exactly the layout it had.
    Subtrees of other node types (dataclasses of environments) are kept as they are.
    """
    if _is_namedtuple(tree):
        return {f: orbax_tree(v) for f, v in zip(tree._fields, tree, strict=True) if v is not None}
    if isinstance(tree, dict):
        return {k: orbax_tree(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(orbax_tree(v) for v in tree)
    return tree


def to_orbax(state: Any) -> Any:
    """The state as orbax stores it: :func:`orbax_tree` of :func:`to_saveable`."""
    return orbax_tree(to_saveable(state))


def from_orbax(saved: Any, like: Any) -> Any:
    """Inverse of :func:`to_orbax`: ``saved`` in the structure of ``like`` (its NamedTuples, its
    None fields), typed keys restored."""

    def rebuild(tree: Any, ref: Any) -> Any:
        if _is_namedtuple(ref):
            return type(ref)(
                *(
                    None if v is None else rebuild(tree[f], v)
                    for f, v in zip(ref._fields, ref, strict=True)
                )
            )
        if isinstance(ref, dict):
            return {k: rebuild(tree[k], v) for k, v in ref.items()}
        if isinstance(ref, list | tuple):
            return type(ref)(rebuild(t, v) for t, v in zip(tree, ref, strict=True))
        return tree

    return from_saveable(rebuild(saved, to_saveable(like)), like)


def _key_impl(ref: Any) -> Any:
    # jax.random.key_impl accepts arrays only; an abstract key carries its implementation in its dtype.
    return jax.random.key_impl(ref) if isinstance(ref, jax.Array) else ref.dtype._impl


def from_saveable(saved: Any, like: Any) -> Any:
    """Inverse of :func:`to_saveable`, with ``like`` (the state, or its abstract version) telling
    which were keys."""
    return jax.tree.map(
        lambda x, ref: jax.random.wrap_key_data(x, impl=_key_impl(ref)) if _is_key(ref) else x,
        saved,
        like,
    )


def _host_view(leaf: Any) -> np.ndarray | None:
    """The bytes this process can vouch for: the whole array, or one replica of a replicated array
    spread over processes; None for an array sharded over other processes' devices."""
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        if not leaf.is_fully_replicated:
            return None
        leaf = leaf.addressable_data(0)
    return np.asarray(leaf)


def to_host(leaf: Any) -> Any:
    """A host copy of ``leaf`` that no later device computation can change.

    ``np.array(..., copy=True)`` rather than ``np.asarray``: on the CPU backend the latter may alias
    the device buffer, which the next (donating) training step overwrites. Arrays spread over other
    processes stay device arrays; orbax copies them to host before ``save`` returns (its default
    without a host-memory limit).
    """
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        return leaf
    return np.array(leaf, copy=True)


def state_digest(state: Any) -> str:
    """SHA-256 of every leaf's path, dtype, shape and bytes, in tree order.

    In a multi-process run, leaves sharded across processes (that no process sees whole) are left
    out; replicated ones (parameters, optimiser state, counters, keys) are always covered.
    """
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(to_saveable(state)):
        array = _host_view(leaf)
        if array is None:
            continue
        digest.update(f"{jax.tree_util.keystr(path)}|{array.dtype}|{array.shape}|".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def nonfinite_leaves(state: Any) -> list[str]:
    """The paths of the floating-point leaves of ``state`` holding a NaN or an infinity."""
    found = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(to_saveable(state)):
        if not jax.dtypes.issubdtype(leaf.dtype, np.inexact):
            continue
        array = _host_view(leaf)
        if array is not None and not np.all(np.isfinite(array)):
            found.append(jax.tree_util.keystr(path))
    return found
