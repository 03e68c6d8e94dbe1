"""The closed vocabularies (stalldiag/vocab.py): each word a member that is its own text, and no
rule of the diagnosis or the renderers comparing a category, a confidence level, a progress state or
a thread's condition with the bare word (issue 41: a typo in a literal is a rule that never fires,
and no checker sees it)."""
import ast
import copy
import json
import re
from pathlib import Path

import pytest

from stalldiag.diagnosis import kinds
from stalldiag.diagnosis.explain import EDGE_WORDS
from stalldiag.diagnosis.registry import M
from stalldiag.vocab import Category, Condition, EdgeKind, Kind, Level, ProgressState, Role, RoleKind, rank_of

PACKAGE = Path(__file__).resolve().parents[2] / "stalldiag"
READERS = sorted((PACKAGE / "diagnosis").rglob("*.py")) + sorted((PACKAGE / "render").rglob("*.py")) + \
    [PACKAGE / "report.py", PACKAGE / "merge.py"]

# what the compared expression names -> the vocabulary it holds
HOLDERS = [
    (re.compile(r"categor"), Category),
    (re.compile(r"\.level\b|confidence"), Level),
    (re.compile(r"progress|\[\"state\"\]"), ProgressState),
    (re.compile(r"\.condition\b"), Condition),
    # a thread view's kind (view.kind, culprit.kernel_kind, a frame row's kind, a root kind); an
    # edge's, a finding's or an fd's kind is another vocabulary
    (re.compile(r"^(?!.*\b(edge|e|link)\b)[\w\.\[\]\(\)-]*\b(view|v|culprit|focus|root|current|holder|thread|t|nxt|w|"
                r"main|waiter|reader|writer|o|row|waker)\.(kind|kernel_kind|frame_kind)$"), Kind),
    (re.compile(r"roles\.get\(|roles\[|^role$|\.role$"), RoleKind),
    # an edge's kind (edge.kind, e.kind, walk.into[i].kind, walk.out_of(v).kind, walk.end.kind)
    (re.compile(r"^(edge|e|step|end|[\w\.]*\.end|[\w\.]*into\[[^]]*\]|[\w\.]*out_of\([^)]*\))\.kind$"), EdgeKind),
]


def literal_comparisons(paths=READERS):
    """(file, line, expression, word) of each comparison of a vocabulary's holder with its bare word."""
    found = []
    for path in paths:
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Compare):
                continue
            left = ast.get_source_segment(source, node.left) or ""
            for holder, vocabulary in HOLDERS:
                if not holder.search(left):
                    continue
                words = {member.value for member in vocabulary}
                for right in node.comparators:
                    items = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
                    found += [(path.name, item.lineno, left, item.value) for item in items
                              if isinstance(item, ast.Constant) and item.value in words]
    return found


def test_no_rule_compares_a_category_level_progress_condition_thread_kind_or_role_with_its_bare_word():
    assert literal_comparisons() == []


def test_the_counter_finds_a_bare_word(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('if decision.category == "sleep" or view.state.condition in ("stopped", "x"):\n    pass\n'
                       'if culprit.kind == "lock" and edge.kind == "child":\n    pass\n'
                       'if g.roles.get(pid) == "compiler":\n    pass\n')
    assert sorted(word for *_rest, word in literal_comparisons([planted])) == ["child", "compiler", "lock", "sleep",
                                                                                 "stopped"]


def test_no_role_is_parsed_back_from_its_text():
    parsed = [(path.name, n) for path in READERS for n, line in enumerate(path.read_text().splitlines(), 1)
              if re.search(r"startswith\(\"rank|role\)?\.split\(\)\[1\]|\"rank %d\" % \w+ ==|== \"rank %d\"", line)]
    assert parsed == []


def test_a_role_is_its_text_with_its_rank_as_a_number():
    rank, outside, main = Role(RoleKind.RANK, rank=3), Role(RoleKind.OUTSIDE, why="holds a lock it waits for"), Role("main")
    assert (rank, rank_of(rank), rank.is_rank) == ("rank 3", 3, True)
    assert outside == "outside the job (holds a lock it waits for)" and outside.kind == RoleKind.OUTSIDE
    assert (rank_of(main), rank_of(None), main.is_rank) == (None, None, False)
    assert json.dumps({rank: [outside]}) == '{"rank 3": ["outside the job (holds a lock it waits for)"]}'
    assert copy.deepcopy(outside) == outside and copy.deepcopy(rank).rank == 3


def test_every_edge_kind_is_said_in_words():
    assert all(isinstance(kind, (EdgeKind, M)) for kind in EDGE_WORDS)
    assert set(EdgeKind) <= set(EDGE_WORDS)


def test_every_thread_kind_has_its_row_and_every_row_its_member():
    assert [row.name for row in kinds.KINDS] == list(Kind)
    assert all(isinstance(row.name, Kind) and isinstance(row.root, Category) for row in kinds.KINDS)


@pytest.mark.parametrize("member", list(Category) + list(Level) + list(ProgressState) + list(Condition) + list(Kind) + list(EdgeKind)
                         + list(RoleKind))
def test_a_member_is_its_own_text_everywhere(member):
    text = member.value
    assert member == text and hash(member) == hash(text)
    assert str(member) == "%s" % member == "{}".format(member) == text
    assert json.dumps({member: member}) == json.dumps({text: text})
    assert {text: 1}[member] == 1 and copy.deepcopy(member) is member
    assert type(member)(text) is member
