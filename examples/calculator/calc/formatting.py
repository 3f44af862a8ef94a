"""Number formatting helpers (unused by the failing path)."""


def fmt(value, digits=3):
    return f"{value:.{digits}f}"


def fmt_all(values):
    return [fmt(v) for v in values]
