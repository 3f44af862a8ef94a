"""Command-line entry: evaluates a few expressions."""

import calc.ops  # noqa: F401  (registers the operators)
from calc.parser import parse
from calc.registry import lookup

EXPRESSIONS = ["add 1 2", "mul 3 4", "sin 0", "root 16", "div 1 4"]


def main():
    for text in EXPRESSIONS:
        op, args = parse(text)
        print(text, "=", lookup(op)(*args))


if __name__ == "__main__":
    main()
