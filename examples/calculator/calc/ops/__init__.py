from calc.ops import arithmetic, powers, trig  # noqa: F401
