"""A pipe's ends by access mode (fixtures/captures/repro_popen_wait_pipe_full.json: Popen('cat
file.txt', shell=True, stdout=PIPE) then wait(); cat blocks writing the full pipe, whose reading
end only the Python parent holds, while /bin/sh between them holds the writing end as its stdout).
CI once named the shell as the pipe's undrained reader: "write" was matched as a reading mode
because it contains the letter r, and the holder nearest the writer on the chain is the shell."""
import copy

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.diagnosis.graph import WaitGraph
from stalldiag.report import build_report

CAPTURE = str(CAPTURES / "repro_popen_wait_pipe_full.json")


def _pids(record):
    cat = next(w for w in record["wakers"] if w["wait"] == "pipe")
    by_comm = {e["comm"]: e["pid"] for e in cat["ends"]}
    return cat, by_comm["python3"], by_comm["sh"]


def test_only_the_holder_of_a_reading_end_is_a_reader():
    record = load_report(CAPTURE)
    cat, parent, shell = _pids(record)
    g = WaitGraph(record)
    view = next(v for v in g.views if (v.pid, v.tid) == (cat["pid"], cat["tid"]))
    assert g.reader_pids(view, cat["target"]) == [parent]
    assert g.writer_pids(view, cat["target"]) == [shell]


def test_the_shell_holding_the_writing_end_first_is_not_named_the_reader():
    record = copy.deepcopy(load_report(CAPTURE))
    cat, parent, shell = _pids(record)
    cat["ends"].reverse()          # the order the host scan found them in on CI
    verdict = build_report(record)["verdict"]
    assert verdict["category"] == "subprocess", verdict["summary"]
    assert "pid %d (/bin/sh" % shell not in verdict["summary"], verdict["summary"]
    assert "pid %d (" % parent in verdict["summary"], verdict["summary"]
