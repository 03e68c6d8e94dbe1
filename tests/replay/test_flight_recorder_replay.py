"""Saved captures of the three Flight Recorder hangs (issue 34; tools/record_captures.py fr_*): a
3-rank gloo job whose rank 2 skips collective 4, runs broadcast there instead of all_reduce, or is
stopped by SIGSTOP, each with PyTorch's debug server started and without it.  With it the report
names the rank, the collective's sequence id and name, and the mismatch; without it the verdict
from stacks is the same and a line says what to set next time."""
import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.diagnosis import diagnose
from stalldiag.diagnosis.registry.names import M


def replay(name):
    capture = load_report(str(CAPTURES / (name + ".json")))
    result = diagnose(capture)
    roles = {p["pid"]: p.get("role") for p in capture["processes"]}
    return capture, result, {f["kind"]: f for f in result["findings"]}, roles


CLAUSES = {
    "skip": "the Flight Recorder shows rank 2 never entered collective 4 (all_reduce) of group default_pg, "
            "which ranks 0-1 entered",
    "op": "the Flight Recorder shows an operation mismatch at collective 4 of group default_pg: rank 2 ran "
          "broadcast where ranks 0-1 ran all_reduce",
    "stop": "the Flight Recorder shows ranks 0-1 waiting in collective 4 (all_reduce) of group default_pg for rank 2",
}


@pytest.mark.parametrize("mode", sorted(CLAUSES))
def test_with_the_debug_server_the_summary_names_the_rank_the_seq_id_and_the_collective(mode):
    capture, result, found, _roles = replay("fr_%s_debug_server" % mode)
    verdict = result["verdict"]
    assert verdict["category"] == "collective"
    assert CLAUSES[mode] in verdict["summary"], verdict["summary"]
    kind = M.COLLECTIVE_RECORD_MISMATCH if mode == "op" else M.COLLECTIVE_BEHIND
    record = found[kind]["record"]
    assert (record["seq"], record["op"], record["ranks"], record["group"]) == (4, "all_reduce", [2], "default_pg")
    assert M.FLIGHT_RECORDER_OFF not in found
    collectives = capture["collectives"]
    assert collectives["armed"] == ["debug-server"]
    # the stopped rank is not asked; every other rank is read from its own worker server
    assert [r["rank"] for r in collectives["ranks"]] == ([0, 1] if mode == "stop" else [0, 1, 2])
    assert all(r["source"] == "debug-server" for r in collectives["ranks"])
    assert collectives["read_s"] < 2.0


@pytest.mark.parametrize("mode", sorted(CLAUSES))
def test_without_it_the_same_verdict_from_stacks_and_what_to_set_next_time(mode):
    _capture, plain, found, roles = replay("fr_%s" % mode)
    _c, served, _f, served_roles = replay("fr_%s_debug_server" % mode)
    assert plain["verdict"]["category"] == served["verdict"]["category"] == "collective"
    # the same culprit rank (pids differ between the two runs)
    assert roles[plain["verdict"]["pid"]] == served_roles[served["verdict"]["pid"]]
    assert "rank 2" in plain["verdict"]["summary"]
    assert "Flight Recorder" not in plain["verdict"]["summary"]
    off = found[M.FLIGHT_RECORDER_OFF]
    assert "start_debug_server()" in off["summary"] and "TORCH_NCCL_DEBUG_INFO_PIPE_FILE" in off["summary"]
    assert off["summary"] in plain["verdict"]["evidence"]


def test_merge_reads_the_records_saved_in_a_hosts_report():
    from stalldiag.merge import merge_reports
    incident = merge_reports([str(CAPTURES / "fr_op_debug_server.json")])
    assert incident.verdict.flight_recorder[0].startswith(
        "operation mismatch at collective 4 of group default_pg: rank 2 ran broadcast where ranks 0-1 ran all_reduce")
    assert incident.verdict.missing_ranks is None
