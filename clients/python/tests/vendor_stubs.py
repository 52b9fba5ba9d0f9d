"""Imports the trainers' own files in tests/vendor with the modules they import but the writer path
never reaches (GPU, cluster, experiment-tracker and multimodal stacks) stood in for by empty modules.

Only the writing code is what the tests run; the stand-ins exist so that its module imports at all.
A stand-in module answers any attribute with a placeholder class (so `from ray import remote` and
`class X(Base)` work); attributes a test needs to behave are passed in explicitly. The stand-ins are
in sys.modules only while the vendored modules import, then the real entries (if any) come back, so
other tests in the same process see the installed packages untouched."""

import contextlib
import importlib
import sys
import types
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

VENDOR = Path(__file__).parent / "vendor"


class _AnyAttribute(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder  # plt.Figure in an annotation, ray.util.X


class _Placeholder(metaclass=_AnyAttribute):
    """Any name a stand-in module is asked for: callable, subclassable, and inert."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return args[0] if len(args) == 1 and callable(args[0]) else self  # a decorator returns what it decorates

    def __getattr__(self, name: str) -> Any:
        return _Placeholder()


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        sub = sys.modules.get(f"{self.__name__}.{name}")
        if sub is not None:  # `from matplotlib import pyplot`: the stood-in submodule
            return sub
        value = type(name, (_Placeholder,), {"__module__": self.__name__})
        setattr(self, name, value)
        return value


def stand_in(name: str, **attrs: Any) -> types.ModuleType:
    mod = _StandIn(name)
    mod.__path__ = []  # a package, so that its submodules can be stood in for too
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


@contextlib.contextmanager
def stubbed(names: Iterable[str], attrs: Optional[Dict[str, Dict[str, Any]]] = None):
    """sys.modules[name] = a stand-in for each name while the block runs; afterwards the previous entries."""
    attrs = attrs or {}
    names = list(names) + [n for n in attrs if n not in names]
    saved = {n: sys.modules.get(n) for n in names}
    for n in names:
        sys.modules[n] = stand_in(n, **attrs.get(n, {}))
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def import_vendored(modules: Iterable[str], stubs: Iterable[str], attrs: Optional[Dict[str, Dict[str, Any]]] = None):
    """The vendored modules (by dotted name), imported with `stubs` stood in for. The trainers' code is Python 3.11
    (typing.NotRequired, match, X | Y at run time): on an older interpreter the calling test module is skipped."""
    if sys.version_info < (3, 11):
        import pytest

        pytest.skip("the trainers' own code needs Python 3.11", allow_module_level=True)
    if str(VENDOR) not in sys.path:
        sys.path.insert(0, str(VENDOR))
    with stubbed(stubs, attrs):
        return [importlib.import_module(m) for m in modules]
