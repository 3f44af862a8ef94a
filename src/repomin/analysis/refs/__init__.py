"""Reference graphs: which files of a tree the code in it can reach (pure, no subprocess).

:class:`RefGraph` finds, per language (Java, Python, JavaScript/TypeScript, C/C++, Rust), the files
each file references, conservatively: it may over-approximate, and it never misses a reference
it can see. Files of other kinds are never cut. The ``refs`` pass (``repomin.passes.refs``)
deletes what no root reaches; :func:`distances` is a prior for deletion searches.
"""

from repomin.analysis.refs.context import LANGUAGES, language_of
from repomin.analysis.refs.graph import RefGraph, distances

__all__ = ["LANGUAGES", "RefGraph", "distances", "language_of"]
