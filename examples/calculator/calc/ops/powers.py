import math

from calc.registry import register


@register("pow")
def power(a, b):
    return a**b


@register("sqrt")
def sqrt(a, _b=None):
    return math.sqrt(a)


@register("exp")
def exp(a, _b=None):
    return math.exp(a)
