"""The optional backends' packages: ``pip install repomin`` is the host runner and the report
tools; the Docker runner needs the ``docker`` extra (the Docker SDK) and ``--cluster`` the
``cluster`` extra (Dask's ``distributed``, which brings ``dask``).

Nothing imports those packages at module level outside the modules of their feature, so the
light commands never load them; the feature's entry points call :func:`require` first, which
turns a missing (or broken) package into one usage line naming the ``pip install`` to run.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from repomin.errors import UsageError


def install_line(extra: str) -> str:
    """The command that adds ``extra`` to an installed ReproMin."""
    return f"pip install 'repomin[{extra}]'"


def require(module: str, extra: str, feature: str | None = None) -> ModuleType:
    """``module`` imported, or a :class:`UsageError` (exit 2): ``feature`` needs the package,
    which is not installed (or fails to import), and the ``pip install`` line of ``extra``."""
    package = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (
            isinstance(exc, ModuleNotFoundError) and (exc.name or "").partition(".")[0] == package
        )
        reason = (
            "which is not installed"
            if missing
            else f"which failed to import ({' '.join(str(exc).split())[:160]})"
        )
        raise UsageError(
            f"{feature or f'the {extra} extra'} needs the {package} package, {reason}; "
            f"install it with: {install_line(extra)}"
        ) from None


__all__ = ["install_line", "require"]
