"""The one registry every extensible kind uses (``voirdire/registry.py``): a lazy built-in
table, a decorator, import paths, checks and one-line errors."""

from __future__ import annotations

import sys
import types
import warnings

import pytest

from voirdire.exceptions import ConfigError
from voirdire.import_paths import import_path, is_import_path
from voirdire.registry import Registry


class Thing:
    name = "thing"


def _check(obj: object) -> None:
    if not (isinstance(obj, type) and issubclass(obj, Thing)):
        raise TypeError(f"{obj!r} is not a Thing")


@pytest.fixture
def fake_module(monkeypatch):
    """A module ``voirdire_test_plugin`` that registers one Thing when imported, and
    defines another it does not register."""
    mod = types.ModuleType("voirdire_test_plugin")
    imported = []

    def install(reg: Registry) -> None:
        def body() -> None:
            imported.append(1)

            @reg.register
            class Decorated(Thing):
                name = "decorated"

            class Plain(Thing):
                name = "plain"

            mod.Decorated, mod.Plain = Decorated, Plain

        mod.__dict__["_body"] = body

    class Loader:
        @staticmethod
        def create_module(spec):
            return mod

        @staticmethod
        def exec_module(m):
            m._body()

    import importlib.abc
    import importlib.machinery

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname == "voirdire_test_plugin":
                return importlib.machinery.ModuleSpec(fullname, Loader())
            return None

    finder = Finder()
    sys.meta_path.insert(0, finder)
    yield install, imported
    sys.meta_path.remove(finder)
    sys.modules.pop("voirdire_test_plugin", None)


def test_builtin_entries_are_imported_on_first_use_only(fake_module):
    install, imported = fake_module
    reg: Registry[type[Thing]] = Registry("thing", check=_check)
    install(reg)
    reg.builtin("decorated", "voirdire_test_plugin:Decorated")
    reg.builtin("plain", "voirdire_test_plugin:Plain")
    assert reg.names() == ("decorated", "plain") and imported == []
    assert "plain" in reg and "other" not in reg
    assert (
        reg.get("plain").name == "plain"
    )  # not registered by its module: taken from the attribute
    assert imported == [1]
    assert (
        reg.get("decorated").name == "decorated"
    )  # registered by the module's decorator
    assert imported == [1]  # the module was imported once


def test_decorator_aliases_replace_and_unregister():
    reg: Registry[type[Thing]] = Registry("thing", check=_check)

    @reg.register(name="one", aliases=("uno",))
    class One(Thing):
        pass

    assert reg.get("uno") is One and reg.names() == ("one",)

    class Other(Thing):
        pass

    with pytest.raises(ValueError, match="already registered"):
        reg.register(Other, name="one")
    reg.register(One)  # the same object again under its own name attribute ("thing")
    reg.register(Other, name="one", replace=True)
    assert reg.get("one") is Other
    reg.unregister("one")
    with pytest.raises(ConfigError, match="unknown thing 'one'"):
        reg.get("one")
    with pytest.raises(TypeError):
        reg.register(object)  # refused by check


def test_import_paths_are_checked_and_errors_are_one_line():
    reg: Registry[type[Thing]] = Registry("thing", check=_check)
    assert is_import_path("tests.test_registry:Thing") and not is_import_path(
        "os.system; x:y"
    )
    assert reg.get("tests.test_registry:Thing") is Thing
    assert reg.find("thing") is Thing  # registered under its own name once imported
    for bad, msg in [
        ("tests.test_registry:nothing_here", "cannot be imported"),
        ("tests.test_registry:_check", "is not a Thing"),
        ("no such thing", "unknown thing"),
        ("../x:y", "not an import path"),
    ]:
        with pytest.raises(ConfigError, match=msg) as err:
            reg.get(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="not an import path"):
        import_path("a:b:c", "thing")


def test_normalised_names_and_missing_extras():
    reg: Registry[object] = Registry(
        "benchmark", normalise=lambda s: s.lower().replace("-", "")
    )
    reg.builtin("MT-Bench", "voirdire.core:LETTERS")
    assert reg.get("mtbench") == reg.get("MT-Bench")
    reg.builtin("needs-extra", "voirdire_no_such_module_xyz:X", extra="api")
    with pytest.raises(ConfigError, match=r"pip install 'voirdire\[api\]'"):
        reg.get("needs-extra")


def test_entry_point_group_entries_are_built_ins(tmp_path, monkeypatch):
    """An installed distribution's entry points in the registry's group are built-in entries,
    read lazily (a distribution made here: a dist-info folder on sys.path)."""
    dist = tmp_path / "voirdire_test_plugin_ep-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: voirdire-test-plugin-ep\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[voirdire.test_things]\nep-thing = tests.test_registry:Thing\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[type[Thing]] = Registry(
        "thing", check=_check, entry_points="voirdire.test_things"
    )
    reg.builtin("code-thing", "tests.test_registry:Thing")
    assert (
        reg._group == "voirdire.test_things"
    )  # nothing read while names are found in code
    assert reg.get("code-thing") is Thing and reg._group is not None
    assert "ep-thing" in reg and reg.get("ep-thing") is Thing
    assert reg.names() == ("code-thing", "ep-thing")
    other: Registry[type[Thing]] = Registry(
        "thing", entry_points="voirdire.no_such_group"
    )
    with pytest.raises(ConfigError, match="unknown thing 'x'; known: $"):
        other.get("x")


def test_a_broken_entry_is_left_out_of_listings_but_raises_when_named(
    tmp_path, monkeypatch
):
    """An installed plugin that fails to import (or an optional dependency missing) must
    not stop every other name: ``available`` leaves it out and says why, ``items`` and a
    lookup of that name raise one line naming it. A module that raises something other
    than ImportError as it loads is a ConfigError too, not a traceback."""
    (tmp_path / "voirdire_test_raises.py").write_text(
        "raise RuntimeError('bad\\nplugin')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[type[Thing]] = Registry("thing", check=_check)
    reg.builtin("good", "tests.test_registry:Thing")
    reg.builtin("missing", "voirdire_no_such_module_xyz:X", extra="x")
    reg.builtin("raises", "voirdire_test_raises:X")
    reg.builtin("wrong", "tests.test_registry:_check")  # not a Thing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert reg.available(warn=True) == {"good": Thing}
    assert set(reg.unavailable) == {"missing", "raises", "wrong"}
    said = [str(w.message) for w in caught]
    assert len(said) == 3 and all(" left out: " in m for m in said)
    assert "voirdire[x]" in said[0]
    assert "RuntimeError: 'bad\\nplugin'" in reg.unavailable["raises"]
    with pytest.raises(
        ConfigError, match="'raises': its module 'voirdire_test_raises' fails"
    ):
        reg.get("raises")
    with pytest.raises(ConfigError, match="needs an optional dependency"):
        reg.items()
    with pytest.raises(TypeError):
        reg.get("wrong")
    assert reg.get("good") is Thing
