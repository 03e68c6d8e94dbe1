"""`stalldiag merge`: the ranks no report has, as ranges up to the job's WORLD_SIZE, and the ranks'
Flight Recorders read together across hosts (issue 34)."""
from pathlib import Path

from stalldiag import flight_recorder as fr
from stalldiag.merge import incident_of_hosts
from stalldiag.render.model import IncidentHost

FR = Path(__file__).resolve().parents[2] / "fixtures" / "flight_recorder"


def row(rank, world=None, state="collective"):
    return {"rank": rank, "local_rank": 0, "pid": 100 + rank, "host": "h%d" % rank, "state": state,
            "where": "all_reduce (torch.distributed)", "frame": None, "gpus": [], "stack": [], "stack_depth": 0,
            "world_size": world}


def host(name, rows, collectives=None):
    return IncidentHost(host=name, file=name + ".json", category="collective", summary="-", ranks=[r["rank"] for r in rows],
                        processes=len(rows), progress=None, collectives=collectives), rows


def test_missing_ranks_are_ranges_up_to_the_world_size_not_a_list_of_every_rank():
    incident = incident_of_hosts([host("a", [row(2, 16384)])])
    assert incident.verdict.missing_ranks == "0-1,3-16383"
    # without WORLD_SIZE: up to the highest rank seen
    assert incident_of_hosts([host("a", [row(0), row(3)])]).verdict.missing_ranks == "1-2"
    assert incident_of_hosts([host("a", [row(0, 2), row(1, 2)])]).verdict.missing_ranks is None


def test_the_records_of_ranks_on_different_hosts_are_compared_together():
    def rec(rank):
        raw = (FR / "nccl_op" / ("nccl_trace_rank_%d" % rank)).read_bytes()
        return dict(fr.read_record(raw, rank=rank, source="dump-file"), host="h%d" % rank)
    incident = incident_of_hosts([host("h0", [row(0, 3), row(1, 3)], [rec(0), rec(1)]),
                                  host("h2", [row(2, 3, state="sleep")], [rec(2)])])
    v = incident.verdict
    assert v.flight_recorder and v.flight_recorder[0].startswith(
        "operation mismatch at collective 4 of group default_pg: rank 2 ran broadcast where ranks 0-1 ran all_reduce")
    assert "the Flight Recorder: operation mismatch at collective 4" in v.summary
    assert v.to_dict()["flight_recorder"] == v.flight_recorder


def test_no_records_no_flight_recorder_line():
    assert incident_of_hosts([host("a", [row(0, 2), row(1, 2, state="sleep")])]).verdict.flight_recorder is None
