from calc.parser import parse


def test_parse():
    assert parse("add 1 2") == ("add", [1.0, 2.0])
