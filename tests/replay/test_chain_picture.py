"""The wait-for chain's picture (render/chain_picture.py), laid out from Reports of saved captures.

Each capture's chain is known (its recorded verdict): the picture must have a box per process on
it, a node per thread on it and an arrow per wait, labelled with what it waits on; a cycle drawn as
a cycle (arrows that lead back to where they started); the culprit marked in colour and in words;
a size bounded whatever the chain; and no markup from the capture.
"""
import copy
import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from stalldiag.capture import load_report
from stalldiag.render import chain_picture, html as html_render
from stalldiag.render.model import ChainStep, ProcessRow, ThreadRow
from stalldiag.report import build, fallback_report

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "fixtures" / "captures"
SVG = "{http://www.w3.org/2000/svg}"


def capture(name):
    return load_report(str(CAPTURES / ("%s.json" % name)))


def report_of(name):
    return build(capture(name))


def chain_nodes(picture):
    return [n for n in picture.nodes if n.role == "chain"]


def closed_loop(picture):
    """The keys of the loop the cycle arrow closes: from its target along the chain's arrows back
    to its source; None when there is no cycle arrow or the arrows do not lead back."""
    closing = [a for a in picture.arrows if a.cycle]
    if len(closing) != 1:
        return None
    out = {a.src: a.dst for a in picture.arrows if not a.cycle}
    key, seen = closing[0].dst, [closing[0].dst]
    while key != closing[0].src:
        if key not in out or out[key] in seen:
            return None
        key = out[key]
        seen.append(key)
    return seen


def parse(markup):
    """The svg as XML: it must be well formed (nothing from the capture broke out of its text)."""
    return ET.fromstring(markup)


def texts(root):
    return ["".join(t.itertext()) for t in root.iter(SVG + "text")]


# --- the chains of saved captures ---------------------------------------------------------------

def test_deadlock_is_one_process_two_threads_and_a_closed_cycle():
    report = report_of("deadlock")
    pic = chain_picture.layout(report)
    assert [b.pid for b in pic.boxes] == [19490]
    assert [n.key for n in chain_nodes(pic)] == [(19490, 19490), (19490, 19491)]
    assert len(pic.nodes) == 2 and len(pic.arrows) == 2          # the process has two threads: both on the chain
    assert pic.cycle and closed_loop(pic) == [(19490, 19490), (19490, 19491)]
    assert all(a.on_cycle for a in pic.arrows) and all(n.on_cycle for n in chain_nodes(pic))
    # each arrow says what it waits on: the lock by name, the futex word
    first, closing = pic.arrows
    assert first.edge == "lock-holder" and "lock 'lock_b'" in first.label[0] and "futex word 0x55907273cda0" in first.label[1]
    assert closing.cycle and "cycle" in closing.label[0] and "lock_a" in closing.label[0]
    # the culprit, in colour and in words
    culprit = pic.culprit
    assert culprit.key == (report.verdict.pid, report.verdict.tid) == (19490, 19491)
    assert "CULPRIT" in culprit.lines[1]
    markup = chain_picture.svg(pic)
    root = parse(markup)
    marked = [g for g in root.iter(SVG + "g") if "culprit" in (g.get("class") or "").split()]
    assert len(marked) == 1 and marked[0].get("data-tid") == "19491"
    assert marked[0].find(SVG + "rect").get("stroke") == chain_picture.CULPRIT_COLOR
    assert any("CULPRIT" in t for t in texts(marked[0]))
    assert len([g for g in root.iter(SVG + "g") if "cycle" in (g.get("class") or "").split()]) == 1


def test_fork_under_a_lock_is_a_cycle_across_two_processes():
    pic = chain_picture.layout(report_of("fork_under_mp_lock"))
    assert [b.pid for b in pic.boxes] == [24532, 24533]
    assert [n.key for n in chain_nodes(pic)] == [(24532, 24532), (24533, 24533)]
    assert [a.edge for a in pic.arrows] == ["child", "lock-holder"]
    assert "child" in pic.arrows[0].label[0] and "child pid 24533" in pic.arrows[0].label[1]
    assert closed_loop(pic) == [(24532, 24532), (24533, 24533)]
    assert pic.culprit.key == (24533, 24533)


def test_wait_for_a_child_is_two_boxes_one_arrow_no_cycle():
    pic = chain_picture.layout(report_of("wait_child"))
    assert [b.pid for b in pic.boxes] == [19518, 19519]
    assert len(chain_nodes(pic)) == 2 and len(pic.nodes) == 2
    (arrow,) = pic.arrows
    assert (arrow.src, arrow.dst, arrow.edge) == ((19518, 19518), (19519, 19519), "child")
    assert "its child" in arrow.label[0] and "wait4 on child pid 19519" in arrow.label[1]
    assert not pic.cycle and closed_loop(pic) is None
    assert pic.culprit.key == (19519, 19519) and pic.culprit.role == "chain"


def test_a_chain_through_a_shell_ends_on_storage():
    pic = chain_picture.layout(report_of("child_shell_slow_reader"))
    assert [b.pid for b in pic.boxes] == [24811, 24812, 24813]
    assert [n.key for n in chain_nodes(pic)] == [(24811, 24811), (24812, 24812), (24813, 24813)]
    assert [a.edge for a in pic.arrows] == ["child", "child", None]
    end = pic.node(("end",))
    assert end is not None and "storage at 1.4 MB/s" in end.lines[0]
    assert pic.arrows[-1].dst == ("end",) and "storage" in pic.arrows[-1].label[0]
    assert "sample-0000.pt" in pic.arrows[-1].tip
    assert not pic.cycle and pic.culprit.key == (24813, 24813)
    # the chain runs down one column, the arrows straight down it
    column = [pic.node(k) for k in [(24811, 24811), (24812, 24812), (24813, 24813), ("end",)]]
    assert len({n.x for n in column}) == 1 and [n.y for n in column] == sorted(n.y for n in column)
    assert all(len(a.points) == 2 for a in pic.arrows)


def test_a_collective_labels_its_arrow_and_counts_the_threads_not_drawn():
    report = report_of("gloo_hang")
    pic = chain_picture.layout(report)
    assert [b.pid for b in pic.boxes] == [19642, 19643]
    (arrow,) = pic.arrows
    assert arrow.edge == "rank" and "collective" in arrow.label[0]
    assert pic.culprit.key == (19643, 19643)
    procs = {p.pid: p for p in report.processes}
    for box in pic.boxes:
        drawn = [n for n in pic.nodes if n.pid == box.pid]
        assert 1 <= len(drawn) <= chain_picture.MAX_THREADS_PER_BOX
        assert box.threads == len(procs[box.pid].threads) and box.hidden == box.threads - len(drawn)
        # the main thread is always among those drawn
        assert (box.pid, box.pid) in {n.key for n in drawn}


def test_a_lock_holder_on_a_slow_disk_names_the_lock():
    pic = chain_picture.layout(report_of("lock_holder_slow_disk"))
    assert [b.pid for b in pic.boxes] == [20985]
    assert [n.key for n in chain_nodes(pic)] == [(20985, 20985), (20985, 20986)]
    assert "state_lock" in pic.arrows[0].label[0] and "futex word" in pic.arrows[0].label[1]
    assert pic.arrows[-1].dst == ("end",) and not pic.cycle
    assert pic.culprit.key == (20985, 20986) and "ckpt-loader" in pic.culprit.lines[0]


@pytest.mark.parametrize("name", ["deadlock", "fork_under_mp_lock", "tcp_server_handler_deadlock",
                                  "repro_pbs_launcher_qstat_pipe", "signal_reenters_queue"])
def test_every_cycle_the_walk_closed_is_drawn_closed(name):
    report = report_of(name)
    back = report.chain[-1].end["cycle_to"]
    pic = chain_picture.layout(report)
    loop = closed_loop(pic)
    assert loop is not None
    assert loop == [(s.pid, s.tid) for s in report.chain[back:]]
    # the closing arrow goes round by the lane at the left of the boxes, into its target
    closing = next(a for a in pic.arrows if a.cycle)
    lane_x = closing.points[2][0]
    assert lane_x < min(b.x for b in pic.boxes) and closing.points[-1] == (pic.node(closing.dst).x,
                                                                          pic.node(closing.dst).cy)


def test_a_thread_waiting_on_itself_is_a_loop_onto_itself():
    pic = chain_picture.layout(report_of("signal_reenters_queue"))
    (arrow,) = pic.arrows
    assert arrow.cycle and arrow.src == arrow.dst == (24316, 24316)
    assert "self.not_full" in arrow.label[0]


# --- the markup ---------------------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script></text></svg><g onload=\"x()\">&amp; 'q' \udcff"


def test_text_from_the_capture_cannot_inject_markup():
    cap = capture("deadlock")
    proc = cap["processes"][0]
    proc["cmdline"] = ["python3", HOSTILE]
    for thread in proc["threads"]:
        thread["name"] = HOSTILE
        thread["python_name"] = HOSTILE + str(thread["tid"])
    report = build(cap)
    pic = chain_picture.layout(report)
    assert HOSTILE[:20] in pic.nodes[0].lines[0]      # the name is shown, as text
    markup = chain_picture.svg(pic)
    markup.encode("utf-8")                            # no lone surrogate left
    assert "<script" not in markup and "onload=" not in markup.replace("onload=&quot;", "")
    assert "</svg>" not in markup[:-len("</svg>")]
    root = parse(markup)                              # well formed: nothing closed early
    assert not list(root.iter(SVG + "script"))
    assert all(el.tag.startswith(SVG) for el in root.iter())
    assert all(not name.startswith("on") for el in root.iter() for name in el.attrib)
    shown = texts(root)
    assert any(t.startswith("tid 19491 '<script>alert(1)</script>") for t in shown)
    page = html_render.render(report)
    assert page.lower().count("<script") == 2         # the data block and the code, nothing else
    assert page.count('id="chain-svg"') == 1


def test_a_report_without_a_chain_has_no_picture():
    report = fallback_report(capture("deadlock"))
    assert chain_picture.layout(report) is None and chain_picture.section(report) == ""
    assert 'id="chain-picture"' not in html_render.render(report)


def test_steps_of_an_older_report_are_labelled_from_their_text():
    report = report_of("wait_child")
    for step in report.chain:
        step.activity = step.waits_on = step.waits_for = None
        step.end = None
    pic = chain_picture.layout(report)
    assert "wait4 on child pid 19519" in pic.arrows[0].label[1]


def test_a_long_chain_over_many_ranks_stays_bounded():
    """64 ranks on a chain, each of 50 threads, a cycle closing on a step left out: the picture
    keeps both ends of the chain, says how many steps it left out, and stays small."""
    report = report_of("gloo_hang")
    base = report.processes[1]
    procs, chain = [], []
    for i in range(64):
        pid = 50000 + i
        threads = [dataclasses.replace(copy.copy(base.threads[0]), tid=pid + k, name="t%d" % k) for k in range(50)]
        procs.append(dataclasses.replace(base, pid=pid, role="rank %d" % i, threads=threads))
        chain.append(ChainStep(pid=pid, tid=pid, name="MainThread", kind="collective", role="rank %d" % i,
                               edge=None if i == 0 else "rank", activity="futex", waits_on="futex word 0x%x" % i,
                               waits_for=None if i == 0 else "waits for it, in a collective of 64 ranks"))
    chain[-1].end = {"edge": "rank", "cycle_to": 20, "resource": None,
                     "waits_for": "waits for it, in a collective of 64 ranks"}
    big = dataclasses.replace(report, chain=chain, processes=procs)
    big.verdict.pid, big.verdict.tid = 50063, 50063
    pic = chain_picture.layout(big)
    assert isinstance(procs[0], ProcessRow) and isinstance(procs[0].threads[0], ThreadRow)
    assert pic.left_out == 64 - chain_picture.MAX_STEPS + 1
    assert len(chain_nodes(pic)) == chain_picture.MAX_STEPS - 1 and pic.node(("gap",)) is not None
    assert len(pic.boxes) <= chain_picture.MAX_STEPS + 1
    assert all(len([n for n in pic.nodes if n.pid == b.pid]) <= chain_picture.MAX_THREADS_PER_BOX for b in pic.boxes)
    assert all(b.hidden == 50 - len([n for n in pic.nodes if n.pid == b.pid]) for b in pic.boxes)
    assert len(pic.nodes) <= chain_picture.MAX_STEPS * chain_picture.MAX_THREADS_PER_BOX + 2
    assert pic.width < 1400 and pic.height < 4000
    assert pic.culprit.key == (50063, 50063)
    assert pic.cycle and closed_loop(pic) is not None    # a cycle onto a step not drawn closes on the gap
    markup = chain_picture.svg(pic)
    parse(markup)
    assert len(markup) < 200_000
    # every ranks' arrow says it is a collective over the ranks
    assert all("collective of 64 ranks" in a.label[0] for a in pic.arrows if a.edge == "rank" and a.src != ("gap",))


@pytest.mark.parametrize("name", ["deadlock", "fork_under_mp_lock", "wait_child", "child_shell_slow_reader",
                                  "gloo_hang", "lock_holder_slow_disk", "nccl_hang", "dataloader_slow_io"])
def test_nodes_and_labels_do_not_overlap(name):
    pic = chain_picture.layout(report_of(name))

    def overlap(a, b):
        return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h

    for i, a in enumerate(pic.nodes):
        assert 0 <= a.x and a.x + a.w <= pic.width and 0 <= a.y and a.y + a.h <= pic.height
        assert not any(overlap(a, b) for b in pic.nodes[i + 1:]), (a.key, name)
        box = next(b for b in pic.boxes if b.pid == a.pid) if a.pid is not None else None
        if box is not None:
            assert box.x <= a.x and a.x + a.w <= box.x + box.w and box.y <= a.y and a.y + a.h <= box.y + box.h
    for arrow in pic.arrows:
        x, y = arrow.label_at
        label = chain_picture.Node(("label",), "label", [], "", x=x, y=y - 11, w=6.3 * max(map(len, arrow.label)),
                                   h=14 * len(arrow.label))
        assert not any(overlap(label, n) for n in pic.nodes), (arrow.label, name)
