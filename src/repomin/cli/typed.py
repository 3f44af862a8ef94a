"""Typed click commands: a frozen dataclass whose fields *are* the command's parameters.

Each field declares its click option or argument in its metadata (:func:`opt`, :func:`flag`,
:func:`arg`); :func:`typed_command` turns the record into the command's parameters, so the
command function receives one typed record and never a ``**kw``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, field, fields
from typing import Any, TypeVar

import click

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["arg", "click_parameters", "flag", "opt", "typed_command"]


def opt(*decls: str, default: Any = MISSING, **click_kw: Any) -> Any:
    """A dataclass field that is also the click option ``decls``."""
    if default is not MISSING:
        click_kw.setdefault("default", default)
    meta = {"click": ("option", decls, click_kw)}
    return field(metadata=meta) if default is MISSING else field(default=default, metadata=meta)


def flag(*decls: str, help: str | None = None) -> Any:
    return opt(*decls, default=False, is_flag=True, help=help)


def arg(**click_kw: Any) -> Any:
    return field(metadata={"click": ("argument", (), click_kw)})


def typed_command(cls: type[T]) -> Callable[[Callable[[T], None]], Callable[..., None]]:
    """Decorate ``fn(args: cls)`` with one click parameter per field of ``cls``."""

    def decorate(fn: Callable[[T], None]) -> Callable[..., None]:
        def callback(**params: Any) -> None:
            fn(cls(**params))

        callback.__doc__ = fn.__doc__
        callback.__name__ = fn.__name__
        return click_parameters(cls, callback)

    return decorate


def click_parameters(cls: type[Any], fn: F) -> F:
    """``fn`` decorated with one click parameter per field of ``cls``, in field order (for a
    command that takes the fields as keyword arguments)."""
    for f in reversed(fields(cls)):
        kind, decls, click_kw = f.metadata["click"]
        if kind == "argument":
            fn = click.argument(f.name, **click_kw)(fn)
        else:
            fn = click.option(*decls, f.name, **click_kw)(fn)
    return fn
