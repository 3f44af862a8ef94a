"""Real pytest cases: old sdists (``pip download`` at run time) whose tests fail under pytest.

Both commands run ``python -m pytest -x -q -p no:cacheprovider`` (pytest's own cache stays out
of the tree) with ``PYTHONPATH=src``: both sdists have a ``src/`` layout, and neither package is
installed in site-packages, so nothing outside the tree can stand in for the sdist's code.

* ``py-pyspnego-0.5.2-pytest``: the pyspnego 0.5.2 sdist (119 files, 1.96 MB, with
  ``tests/conftest.py``); its own suite stops (``-x``) at the first test of
  ``tests/test_asn1.py``, which fails at call time on Python 3.11: ``extract_asn1_tlv`` formats
  its ``ValueError`` with ``%s`` of two ``IntEnum`` members, and 3.11 made ``str()`` of an
  ``IntEnum`` the bare number, so the message says ``tag class 0 and tag number 2`` where the
  test's ``pytest.raises(ValueError, match=...)`` expects ``TagClass.universal`` and
  ``TypeTagNumber.integer``. The contract is pytest's ``Actual message: '...'`` line of that
  mismatch; the expected message, mostly the same words, is in the test source, which pytest
  prints with the failure. Every test module is collected first (most of ``spnego`` is
  imported), so a run of the unreduced tree in a fresh copy takes 2-3 s.
* ``py-marshmallow-3.0.0-pytest-flaky``: the marshmallow 3.0.0 sdist (75 files; its own tests
  need pytz and simplejson, which are not installed) + ``test_user_json.py``, an API's pytest
  check that a user's JSON body lists ``name`` before ``email`` (76 files, 731 kB). marshmallow
  3.0.0 builds a schema's fields from a ``set`` of their names unless ``class Meta: ordered =
  True``, so the body's key order follows the interpreter's hash seed and the check fails in
  roughly half the runs (``PYTHONHASHSEED`` is random by default; 41 of 80 runs here, 7/16 if
  the two names' slots were independent and a collision kept the declared order).

Neither hand-made minimum keeps a file whole: both are deletions all the way down (2 files /
854 B and 6 files / 2,708 B), the smallest found by hand, not proven the smallest there is.
Both keep what pytest prints of the failing assertion (the expected pattern, the compared
strings): the failure's identity pins it, so a minimum that changes it is another failure.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cases import PYTHON, Case, fetch_sdist
from interesting import Contract
from real_fetch import expert_builder, extract

PYSPNEGO = ("pyspnego", "0.5.2")
MARSHMALLOW = ("marshmallow", "3.0.0")

PY = shlex.quote(PYTHON)
#: Stop at the first failure; pytest's own cache stays out of the tree.
PYTEST = f"{PY} -m pytest -x -q -p no:cacheprovider"


def _sdist(
    spec: tuple[str, str], cache: Path, extra: dict[str, str] | None = None
) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        extract(fetch_sdist(*spec, cache), root)
        for rel, text in (extra or {}).items():
            (root / rel).write_text(text, "utf-8")

    return build


TEST_USER_JSON_PY = """\
\"\"\"The API's contract: a user's JSON body lists the name first, then the email.\"\"\"
from marshmallow import Schema, fields


class UserSchema(Schema):
    name = fields.Str(required=True)
    email = fields.Email(required=True)


def test_user_body():
    body = UserSchema().dumps({"name": "Ann", "email": "ann@example.org"})
    assert body == '{"name": "Ann", "email": "ann@example.org"}', body
"""


def pytest_cases(real: Path) -> list[Case]:
    return [
        Case(
            name=f"py-pyspnego-{PYSPNEGO[1]}-pytest",
            description=(
                f"pyspnego {PYSPNEGO[1]} sdist (119 files, tests/conftest.py); its own pytest "
                "suite fails at call time on Python 3.11: str() of an IntEnum is its number"
            ),
            contract=Contract(
                command=f"PYTHONPATH=src {PYTEST} tests",
                match=(
                    r"Actual message: 'Invalid ASN\.1 OCTET STRING tags, "
                    r"actual tag class 0 and tag number 2'"
                ),
                timeout=60.0,
            ),
            build=_sdist(PYSPNEGO, real),
            cap_full=300.0,
            kind="python-pytest",
            **PYSPNEGO_EXPERT,
        ),
        Case(
            name=f"py-marshmallow-{MARSHMALLOW[1]}-pytest-flaky",
            description=(
                f"marshmallow {MARSHMALLOW[1]} sdist (75 files) + an API's pytest check of a "
                "JSON body's key order, which follows the hash seed (a set of names): fails "
                "in about half the runs"
            ),
            contract=Contract(
                command=f"PYTHONPATH=src {PYTEST} test_user_json.py",
                match=r'AssertionError: \{"email": "ann@example\.org", "name": "Ann"\}',
                timeout=30.0,
            ),
            build=_sdist(MARSHMALLOW, real, {"test_user_json.py": TEST_USER_JSON_PY}),
            flaky=True,
            cap_full=300.0,
            kind="python-pytest-flaky",
            **MARSHMALLOW_EXPERT,
        ),
    ]


# -- the hand-made minima ------------------------------------------------------------------------
# Every file of a minimum holds only text of the unreduced file (lines and parts of lines
# deleted, nothing added); packages whose ``__init__.py`` is not needed become namespace
# packages. ``None`` keeps a file whole.


def _expert(note: str, files: int, size: int, tree: dict[str, str | None]) -> dict[str, Any]:
    return {
        "expert": expert_builder(tree),
        "expert_files": files,
        "expert_bytes": size,
        "expert_note": note,
    }


PYSPNEGO_EXPERT = _expert(
    "test_asn1 cut to the one test, its expected message kept whole (pytest prints it in the "
    "failure, which the identity pins; until 2026-12-05 cut to `y`, 2 files / 718 B, another "
    "failure under the identity) and the call's first argument to the TypeTagNumber; _asn1.py "
    "cut to two plain classes (no IntEnum: the minimum no longer depends on Python 3.11), the "
    "OCTET STRING label and extract_asn1_tlv's message and raise (spnego, tests namespace "
    "packages)",
    2,
    854,
    {
        "tests/test_asn1.py": (
            "import re\n"
            "import pytest\n"
            "import spnego._asn1 as asn1\n"
            "def test_extract_asn1_tlv_invalid_universal_class():\n"
            "    expected = (\n"
            '        "Invalid ASN.1 OCTET STRING tags, actual tag class TagClass.universal and tag '
            'number " "TypeTagNumber.integer"\n'
            ")\n"
            "    with pytest.raises(ValueError, match=re.escape(expected)):\n"
            "        asn1.extract_asn1_tlv(\n"
            "asn1.TypeTagNumber.integer,\n"
            "asn1.TagClass.universal,\n"
            "asn1.TypeTagNumber.octet_string,\n"
            ")\n"
        ),
        "src/spnego/_asn1.py": (
            "class TagClass:\n"
            "    universal = 0\n"
            "class TypeTagNumber:\n"
            "    integer = 2\n"
            "    octet_string = 4\n"
            "    def native_labels():\n"
            "        return {\n"
            'TypeTagNumber.octet_string: "OCTET STRING",\n'
            "}\n"
            "def extract_asn1_tlv(\n"
            "tlv,\n"
            "tag_class,\n"
            "tag_number,\n"
            "):\n"
            "    label_name = TypeTagNumber.native_labels().get(tag_number)\n"
            '    msg = "Invalid ASN.1 %s tags, actual tag class %s and tag number %s" % (\n'
            "label_name,\n"
            "tag_class,\n"
            "tlv,\n"
            ")\n"
            "    raise ValueError(msg)\n"
        ),
    },
)
MARSHMALLOW_EXPERT = _expert(
    "the check with `required=True` and its docstring gone and its assertion kept whole "
    "(pytest prints the compared values, which the identity pins; until 2026-12-05 cut to "
    "`assert '', body`, 6 files / 2,657 B, another failure under the identity); schema.py "
    "cut to the metaclass collecting the fields, the set of their names in _init_fields, "
    "dump/dumps and a SchemaOpts holding json; fields.py to Field.get_value/serialize, String, "
    "Email and Str; utils' two getters; base's FieldABC; __init__'s Schema import",
    6,
    2708,
    {
        "test_user_json.py": (
            "from marshmallow import Schema, fields\n"
            "class UserSchema(Schema):\n"
            "    name = fields.Str()\n"
            "    email = fields.Email()\n"
            "def test_user_body():\n"
            '    body = UserSchema().dumps({"name": "Ann", "email": "ann@example.org"})\n'
            '    assert body == \'{"name": "Ann", "email": "ann@example.org"}\', body\n'
        ),
        "src/marshmallow/__init__.py": "from marshmallow.schema import Schema\n",
        "src/marshmallow/base.py": "class FieldABC:\n    parent = None\n",
        "src/marshmallow/utils.py": (
            "def get_value(obj, key):\n"
            "    return _get_value_for_key(obj, key)\n"
            "def _get_value_for_key(obj, key):\n"
            "    return obj[key]\n"
        ),
        "src/marshmallow/fields.py": (
            "from marshmallow import utils\n"
            "from marshmallow.base import FieldABC\n"
            "class Field(FieldABC):\n"
            "    def get_value(self, obj, attr):\n"
            "        accessor_func = utils.get_value\n"
            "        check_key = attr\n"
            "        return accessor_func(obj, check_key)\n"
            "    def serialize(self, attr, obj):\n"
            "        value = self.get_value(obj, attr)\n"
            "        return value\n"
            "class String(Field):\n"
            "    default_error_messages = {\n"
            "    }\n"
            "class Email(String):\n"
            "    default_error_messages = {}\n"
            "Str = String\n"
        ),
        "src/marshmallow/schema.py": (
            "import json\n"
            "from marshmallow import base\n"
            "def _get_fields(attrs, field_class):\n"
            "    fields = [\n"
            "        (field_name, field_value)\n"
            "        for field_name, field_value in attrs.items()\n"
            "        if isinstance(field_value, field_class)\n"
            "    ]\n"
            "    return fields\n"
            "class SchemaMeta(type):\n"
            "    def __new__(mcs, name, bases, attrs):\n"
            "        cls_fields = _get_fields(attrs, base.FieldABC)\n"
            "        klass = super().__new__(mcs, name, bases, attrs)\n"
            "        klass.opts = klass.OPTIONS_CLASS()\n"
            "        klass._declared_fields = mcs.get_declared_fields(\n"
            "            cls_fields=cls_fields,\n"
            "        )\n"
            "        return klass\n"
            "    def get_declared_fields(cls_fields):\n"
            "        return dict(cls_fields)\n"
            "class SchemaOpts:\n"
            "    def __init__(self):\n"
            "        render_module = json\n"
            "        self.render_module = render_module\n"
            "class BaseSchema:\n"
            "    OPTIONS_CLASS = SchemaOpts\n"
            "    def __init__(\n"
            "        self,\n"
            "    ):\n"
            "        self.declared_fields = self._declared_fields\n"
            "        self.fields = self._init_fields()\n"
            "    def _serialize(self, obj):\n"
            "        ret = dict()\n"
            "        for attr_name, field_obj in self.fields.items():\n"
            "            value = field_obj.serialize(attr_name, obj)\n"
            "            key = attr_name\n"
            "            ret[key] = value\n"
            "        return ret\n"
            "    def dump(self, obj):\n"
            "        result = self._serialize(obj)\n"
            "        return result\n"
            "    def dumps(self, obj):\n"
            "        serialized = self.dump(obj)\n"
            "        return self.opts.render_module.dumps(serialized)\n"
            "    def _init_fields(self):\n"
            "        field_names = set(self.declared_fields)\n"
            "        fields_dict = dict()\n"
            "        for field_name in field_names:\n"
            "            field_obj = self.declared_fields.get(field_name)\n"
            "            fields_dict[field_name] = field_obj\n"
            "        return fields_dict\n"
            "class Schema(BaseSchema, metaclass=SchemaMeta):\n"
            "    __doc__ = BaseSchema.__doc__\n"
        ),
    },
)
