from calc.registry import register


@register("add")
def add(a, b):
    return a + b


@register("sub")
def sub(a, b):
    return a - b


@register("mul")
def mul(a, b):
    return a * b


@register("div")
def div(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b
