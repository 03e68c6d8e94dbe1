"""stalldiag.records.typed_record: a dataclass's declaration with shared methods, so that defining
a record costs no compile."""
import dataclasses
from typing import List, Optional

import pytest

from stalldiag import records
from stalldiag.records import typed_record


@typed_record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: List[str] = dataclasses.field(default_factory=list)
    note: Optional[str] = dataclasses.field(default=None, repr=False, compare=False)


@typed_record
class Box:
    inside: Optional[object] = None
    checked: bool = False

    def __post_init__(self):
        self.checked = True


def test_arguments_by_position_keyword_default_and_factory():
    p = Point(1, tags=["a"])
    assert (p.x, p.y, p.tags, p.note) == (1, 0, ["a"], None)
    assert Point(1).tags is not Point(1).tags       # a factory per instance


@pytest.mark.parametrize("call, message", [
    (lambda: Point(), "missing required argument: 'x'"),
    (lambda: Point(1, 2, [], None, 5), "takes 4 positional arguments"),
    (lambda: Point(1, x=2), "multiple values for argument 'x'"),
    (lambda: Point(1, z=2), "unexpected keyword argument 'z'"),
])
def test_wrong_arguments_say_what_is_wrong(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_equality_and_hash_by_value_of_compared_fields():
    assert Point(1, 2, note="a") == Point(1, 2, note="b")
    assert Point(1, 2) != Point(1, 3)
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, (), note="other"))
    assert len({Point(1, 2, ()), Point(1, 2, ())}) == 1
    with pytest.raises(TypeError):
        hash(Box())                                  # not declared frozen: unhashable, as a dataclass


def test_post_init_runs_and_dataclass_functions_work():
    assert Box().checked
    assert dataclasses.replace(Point(1, 2), y=5) == Point(1, 5)
    assert dataclasses.asdict(Point(1, 2)) == {"x": 1, "y": 2, "tags": [], "note": None}
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags", "note"]


def test_repr_shows_shown_fields_and_survives_a_cycle():
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"
    box = Box()
    box.inside = box
    assert repr(box) == "Box(inside=..., checked=True)"


def test_a_frozen_record_refuses_changes_under_checks():
    assert records.CHECKS                            # tests/conftest.py sets STALLDIAG_CHECKS=1
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
