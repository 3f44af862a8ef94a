import math

from calc.registry import register


@register("sin")
def sin(a, _b=None):
    return math.sin(a)


@register("cos")
def cos(a, _b=None):
    return math.cos(a)


@register("tan")
def tan(a, _b=None):
    return math.tan(a)
