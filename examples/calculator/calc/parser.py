"""Parse 'op a [b]' expressions."""


def parse(text):
    parts = text.split()
    if not parts:
        raise ValueError("empty expression")
    op, *args = parts
    return op, [float(a) for a in args]
