"""The CLI's persistent compilation cache: where it goes, how it is turned off, what it leaves."""

import jax
import pytest

from mz_jax.cli import compilation_cache


@pytest.fixture
def restore_jax_cache_config():
    saved = (
        jax.config.jax_compilation_cache_dir,
        jax.config.jax_persistent_cache_min_compile_time_secs,
    )
    jax.config.update("jax_compilation_cache_dir", None)
    yield
    jax.config.update("jax_compilation_cache_dir", saved[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", saved[1])


def test_off_leaves_jax_without_a_cache(monkeypatch, restore_jax_cache_config):
    for setting in ("off", "OFF", "0", "none"):
        monkeypatch.setenv("MZ_JAX_COMPILATION_CACHE", setting)
        assert compilation_cache.enable() is None
        assert jax.config.jax_compilation_cache_dir is None


def test_directory_from_the_environment_is_created_and_used(
    tmp_path, monkeypatch, restore_jax_cache_config
):
    monkeypatch.setenv("MZ_JAX_COMPILATION_CACHE", str(tmp_path / "a" / "b"))
    assert compilation_cache.enable() == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir()
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "a" / "b")


def test_default_directory_follows_xdg_cache_home(tmp_path, monkeypatch, restore_jax_cache_config):
    monkeypatch.delenv("MZ_JAX_COMPILATION_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compilation_cache.enable() == tmp_path / "mz_jax" / "xla"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "mz_jax" / "xla")


def test_a_directory_configured_for_jax_is_kept(tmp_path, monkeypatch, restore_jax_cache_config):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "mine"))
    monkeypatch.setenv("MZ_JAX_COMPILATION_CACHE", str(tmp_path / "other"))
    assert compilation_cache.enable() == tmp_path / "mine"
    assert not (tmp_path / "other").exists()


def test_an_unwritable_place_means_no_cache_not_an_error(
    tmp_path, monkeypatch, restore_jax_cache_config
):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MZ_JAX_COMPILATION_CACHE", str(blocker / "cache"))
    assert compilation_cache.enable() is None
    assert jax.config.jax_compilation_cache_dir is None
