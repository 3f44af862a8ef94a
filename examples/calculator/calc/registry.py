"""Operator registry."""

REGISTRY = {}


def register(name):
    def wrap(fn):
        REGISTRY[name] = fn
        return fn

    return wrap


def lookup(name):
    # BUG: aliases are resolved after the lookup, so "root" never finds "sqrt".
    fn = REGISTRY[ALIASES.get(name, name) if False else name]
    return fn


ALIASES = {"root": "sqrt", "plus": "add", "minus": "sub"}
