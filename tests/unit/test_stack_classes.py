"""Stack consensus: ranks in classes by their normalized stacks, the point where a class leaves a
larger one (STAT's prefix tree), and rank and host lists written short.

- A rank's normalized stack is its innermost 12 frames as (function, file basename): lines and
  directories do not split a class, a frame of the user's own code does.
- Classes are largest first (ties: waiting ranks first, then the lowest rank); the outliers are the
  ranks not waiting while others wait on their peers, else the ranks of the smaller classes.
- Rows without a stack (a report written before rows had one) fall back to state and where.
- rank_ranges / host_ranges write thousands of ranks or hosts in a few characters.
"""
from types import SimpleNamespace

import pytest

from stalldiag.diagnosis.ranks import CLASS_FRAMES, class_key, group, normalized_stack, suspects
from stalldiag.merge import consensus_text, incident_of_hosts
from stalldiag.render.consensus import classes_of, divergence, host_ranges, hosts_text, rank_ranges, shown_classes
from stalldiag.render.model import IncidentHost

LIB = "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"
TRAIN = [["train", "/home/u/job/train.py", 80], ["main", "/home/u/job/train.py", 120],
         ["<module>", "/home/u/job/train.py", 130]]
ALL_REDUCE = [["all_reduce", LIB, 3252], ["sync", "/home/u/job/train.py", 88]] + TRAIN
EVALUATE = [["evaluate", "/home/u/job/eval.py", 31], ["train", "/home/u/job/train.py", 84]] + TRAIN[1:]


def row(rank, state="collective", where="all_reduce (torch.distributed)", stack=ALL_REDUCE, host="node001",
        depth=None):
    out = {"rank": rank, "local_rank": rank % 8, "pid": 1000 + rank, "host": host, "state": state, "where": where,
           "frame": "sync (train.py:88) `dist.all_reduce(g)`", "gpus": []}
    if stack is not None:
        out["stack"] = [list(f) for f in stack]
        out["stack_depth"] = len(stack) if depth is None else depth
    return out


# --- normalization ---------------------------------------------------------------------------

def test_lines_and_directories_do_not_split_a_class_functions_and_files_do():
    moved = [[f, "/other/checkout/" + file.rsplit("/", 1)[-1], line + 7] for f, file, line in ALL_REDUCE]
    assert normalized_stack(row(0)) == normalized_stack(row(1, stack=moved))
    assert normalized_stack(row(0))[:2] == (("all_reduce", "distributed_c10d.py"), ("sync", "train.py"))
    assert class_key(row(0)) == class_key(row(1, stack=moved))
    assert class_key(row(0)) != class_key(row(2, stack=[["sync_v2", "/home/u/job/train.py", 88]] + TRAIN))
    assert class_key(row(0)) != class_key(row(3, state="frozen"))      # a stopped rank at the same line


def test_only_the_innermost_frames_decide():
    deep = [["f%d" % i, "/x/lib.py", i] for i in range(CLASS_FRAMES)]
    a = row(0, stack=deep + [["outer_a", "/x/a.py", 1]])
    b = row(1, stack=deep + [["outer_b", "/x/b.py", 1]])
    assert len(normalized_stack(a)) == CLASS_FRAMES and class_key(a) == class_key(b)


def test_a_row_without_a_stack_falls_back_to_state_and_where():
    old = row(0, stack=None)
    assert "stack" not in old and class_key(old) == ("collective", "all_reduce (torch.distributed)")
    assert class_key(row(1, stack=[])) == class_key(old)
    assert [len(m) for _s, m in group([old, row(1, stack=None), row(2, state="sleep", where="prep", stack=None)])] \
        == [2, 1]


# --- classes and outliers ----------------------------------------------------------------------

def test_classes_are_largest_first_and_the_small_class_is_the_outlier():
    rows = [row(i) for i in range(7)] + [row(7, state="cpu", where="evaluate", stack=EVALUATE)]
    groups = group(rows)
    assert [len(m) for _s, m in groups] == [7, 1] and groups[1][1][0]["rank"] == 7
    assert [r["rank"] for r in suspects(rows)] == [7]


def test_a_rank_at_the_same_collective_from_another_caller_is_its_own_class():
    """All wait in all_reduce, one reached it from evaluate(): the 'state in where' shape was one."""
    other = [["all_reduce", LIB, 3252]] + EVALUATE
    rows = [row(i) for i in range(7)] + [row(7, stack=other)]
    assert len({r["state"] + r["where"] for r in rows}) == 1
    assert [len(m) for _s, m in group(rows)] == [7, 1]
    assert [r["rank"] for r in suspects(rows)] == [7]


def test_the_waiting_rule_is_kept_ranks_elsewhere_while_others_wait():
    """As before: the ranks not waiting are the suspects, even in a large class of their own."""
    rows = [row(0)] + [row(i, state="sleep", where="prep", stack=EVALUATE) for i in range(1, 4)]
    assert [r["rank"] for r in suspects(rows)] == [1, 2, 3]


def test_classes_of_one_size_waiting_first_then_the_lowest_rank():
    rows = [row(0, state="cpu", where="evaluate", stack=EVALUATE), row(1)]
    assert [m[0]["rank"] for _s, m in group(rows)] == [1, 0]
    both_wait = [row(0), row(1, stack=[["barrier", LIB, 5356], ["sync", "/home/u/job/train.py", 90]] + TRAIN)]
    assert [m[0]["rank"] for _s, m in group(both_wait)] == [0, 1]
    assert [r["rank"] for r in suspects(both_wait)] == [1]
    assert suspects([row(0), row(1)]) == []


# --- the prefix tree: where a class leaves a larger one --------------------------------------------

def member(rank, stack, state="collective", depth=None, suspect=False, host="node001"):
    return SimpleNamespace(rank=rank, host=host, state=state, where="w", frame=None, suspect=suspect,
                           stack=stack, stack_depth=len(stack) if depth is None else depth)


def test_divergence_is_the_deepest_common_frame_from_the_outermost():
    shared, common, into, prefix = divergence(member(7, EVALUATE), member(0, ALL_REDUCE))
    assert shared == 3 and not prefix     # <module>, main, train
    assert (common.function, common.file, common.line) == ("train", "train.py", 84)   # its own line
    assert (into.function, into.file, into.line) == ("evaluate", "eval.py", 31)
    # a rank still in train() itself, where the others went on into sync(): a caller of their frames
    in_train = [["train", "/home/u/job/train.py", 81]] + TRAIN[1:]
    shared, common, into, prefix = divergence(member(7, in_train), member(0, ALL_REDUCE))
    assert into is None and prefix and (common.function, common.line) == ("train", 81)
    # a rank deeper than the others' innermost frame
    deeper = [["wait", "/x/lib.py", 3]] + ALL_REDUCE
    shared, common, into, prefix = divergence(member(9, deeper), member(0, ALL_REDUCE))
    assert shared == len(ALL_REDUCE) and common.function == "all_reduce" and into.function == "wait"
    # the same frames: only the state differs
    assert divergence(member(5, ALL_REDUCE, state="frozen"), member(0, ALL_REDUCE))[2:] == (None, False)


def test_frames_a_row_did_not_keep_count_as_shared():
    """Rows keep 16 frames: two deep stacks are compared by depth from the outermost, the frames
    neither kept counting as the same training loop."""
    a = [["leaf_a", "/x/a.py", 1]] + [["f%d" % i, "/x/lib.py", i] for i in range(15)]
    b = [["leaf_b", "/x/b.py", 1]] + [["f%d" % i, "/x/lib.py", i] for i in range(15)]
    shared, common, into, _prefix = divergence(member(1, a, depth=40), member(0, b, depth=40))
    assert shared == 39 and common.function == "f0" and into.function == "leaf_a"


def test_each_class_is_compared_with_the_larger_class_it_shares_most_frames_with():
    script_b = [[f, file.replace("train.py", "other.py"), line] for f, file, line in ALL_REDUCE]
    stuck_b = [["prep", "/home/u/job/other.py", 24]] + [[f, file.replace("train.py", "other.py"), line]
                                                         for f, file, line in TRAIN]
    groups = [("a", [member(i, ALL_REDUCE) for i in range(4)]),
              ("b", [member(i, script_b) for i in range(4, 7)]),
              ("stuck", [member(7, stuck_b, state="sleep", suspect=True)])]
    classes = classes_of(groups)
    assert [c.index for c in classes] == [1, 2, 3] and [c.count for c in classes] == [4, 3, 1]
    assert classes[0].diverges is None and classes[2].outlier and not classes[1].outlier
    assert classes[1].diverges.common is None     # another script: nothing in common
    d = classes[2].diverges
    assert d.from_class == 2 and d.common.function == "train" and d.into.function == "prep"
    assert d.text() == "diverges from #2 below train (other.py:80), into prep (other.py:24)"
    assert [f.file for f in classes[0].stack][:2] == ["distributed_c10d.py", "train.py"]


# --- compact lists --------------------------------------------------------------------------------

@pytest.mark.parametrize("ranks, text", [
    (list(range(4095)) + [4096, 4097, 4098, 4099], "0-4094,4096-4099"),
    ([3], "3"), ([], "-"), ([5, 3, 4, 4, 9], "3-5,9"), ([0, 2, 4], "0,2,4"),
])
def test_rank_ranges(ranks, text):
    assert rank_ranges(ranks) == text


def test_rank_ranges_can_be_cut_short_and_say_so():
    assert rank_ranges(range(0, 100, 2), max_runs=3) == "0,2,4,... (50 runs)"


@pytest.mark.parametrize("hosts, text", [
    (["node%03d" % i for i in range(1, 257)], "node[001-256]"),
    (["node%04d" % i for i in range(1, 2049)], "node[0001-2048]"),         # 1000-2048 keep the width
    (["node%d" % i for i in range(1, 13)], "node[1-12]"),
    (["gpu-%02d" % i for i in (1, 2, 3, 7)] + ["cpu-1", "cpu-2"], "cpu-[1-2],gpu-[01-03,07]"),
    (["node007"], "node007"),
    (["alpha", "beta", "gamma", "delta"], "4 hosts: alpha, beta, delta, ..."),
])
def test_host_ranges(hosts, text):
    assert host_ranges(hosts) == text


def test_hosts_text_counts_them():
    assert hosts_text(["n1"]) == "n1" and hosts_text(["n%d" % i for i in range(1, 5)]) == "4 hosts n[1-4]"


# --- the incident's words ---------------------------------------------------------------------------

def _incident(rows_per_host):
    hosts = [(IncidentHost(host=host, file=host + ".json", category="collective", summary="s",
                           ranks=[r["rank"] for r in rows], processes=len(rows), progress=None), rows)
             for host, rows in rows_per_host]
    return incident_of_hosts(hosts)


def test_the_incident_names_the_outlier_and_says_where_it_diverged():
    rows = [row(i, host="node%03d" % (i // 8 + 1)) for i in range(63)] + \
        [row(63, state="cpu", where="evaluate", stack=EVALUATE, host="node008")]
    rows[63]["frame"] = "evaluate (eval.py:31) `model(x)`"
    merged = _incident([("node%03d" % (h + 1), rows[h * 8:h * 8 + 8]) for h in range(8)])
    v = merged.verdict
    assert (v.rank, v.host) == (63, "node008") and [s.rank for s in v.suspects] == [63]
    assert [(c.count, c.outlier) for c in merged.groups] == [(63, False), (1, True)]
    assert merged.groups[0].hosts == ["node%03d" % h for h in range(1, 9)]
    assert v.consensus == ("ranks 0-62: collective in all_reduce (torch.distributed), at sync (train.py:88); "
                           "rank 63 diverged from #1 below train (train.py:84): cpu in evaluate (eval.py:31)")
    assert [r.class_index for r in merged.ranks] == [1] * 63 + [2]
    assert v.missing_ranks is None
    assert consensus_text([]) is None


def test_the_incident_says_which_ranks_no_report_has():
    merged = _incident([("a", [row(0), row(1)]), ("b", [row(6, host="b"), row(7, host="b")])])
    assert merged.verdict.missing_ranks == "2-5" and "no outlier rank" in merged.verdict.summary


def test_the_outlier_of_the_smallest_class_is_named_first():
    """Several ranks are elsewhere while the rest wait: the rarest stack is named, not the lowest rank."""
    rows = [row(i) for i in range(10)] + [row(i, state="cpu", where="evaluate", stack=EVALUATE) for i in (10, 11, 12)]
    rows.append(row(13, state="sleep", where="prep", stack=[["prep", "/home/u/job/data.py", 5]] + TRAIN))
    merged = _incident([("node001", rows)])
    assert merged.verdict.rank == 13 and [s.rank for s in merged.verdict.suspects] == [13, 10, 11, 12]
    assert [r.rank for r in merged.outliers] == [13, 10, 11, 12]


def test_a_short_report_lists_the_largest_classes_and_every_outlier_class_it_can():
    classes = classes_of([("c%d" % i, [member(i, [["f%d" % i, "/x/a.py", 1]], suspect=i >= 6)]) for i in range(12)])
    shown, hidden, hidden_ranks = shown_classes(classes, limit=6)
    assert len(shown) == 6 and hidden == 6 and hidden_ranks == 6
    assert sum(c.outlier for c in shown) == 3 and [c.index for c in shown] == sorted(c.index for c in shown)
