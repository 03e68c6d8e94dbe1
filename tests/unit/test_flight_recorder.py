"""The Flight Recorder reader and the comparison of ranks' records (issue 34), on dumps of real hung
gloo jobs (tools/record_flight_recorder.py: fixtures/flight_recorder/MODE/), on the same hangs as
NCCL dumps them (nccl_MODE/nccl_trace_rank_N), and on hostile input."""
import os
import pickle
from pathlib import Path

import pytest

from stalldiag import flight_recorder as fr
from stalldiag.diagnosis.collectives import analyze, clause, sentence
from stalldiag.probes import flight_recorder as probe

FR = Path(__file__).resolve().parents[2] / "fixtures" / "flight_recorder"
RANKS = range(3)

# mode -> what the records must say: (kind, odd ranks, seq, op, differs)
EXPECTED = {
    "skip": ("behind", [2], 4, "all_reduce", None),
    "stop": ("behind", [2], 4, "all_reduce", None),
    "op": ("mismatch", [2], 4, "all_reduce", "operation"),
    "size": ("mismatch", [2], 4, "all_reduce", "sizes"),
}


def records(mode, name, source):
    out = []
    for rank in RANKS:
        path = FR / mode / (name % rank)
        if path.exists():
            out.append(dict(fr.read_record(path.read_bytes(), rank=rank, source=source), host="h"))
    return out


def check(gaps, mode):
    kind, odd, seq, op, differs = EXPECTED[mode]
    first = gaps[0]
    assert (first.kind, first.ranks, first.seq, first.op, first.differs) == (kind, odd, seq, op, differs), gaps
    assert first.others == [0, 1] and first.group == "default_pg"
    return first


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_each_ranks_own_pickle_names_the_rank_the_seq_id_and_the_collective(mode):
    gap = check(analyze(records(mode, "rank%d.pkl", "file")), mode)
    text = sentence(gap)
    assert "rank 2" in text and "collective 4" in text and "default_pg" in text
    # pickles hold frames: the culprit's own call site is named
    assert {"skip": "sync_gradients", "stop": "sync_gradients", "op": "sync_weights",
            "size": "sync_stats"}[mode] in text
    if mode == "op":
        assert "rank 2 ran broadcast where ranks 0-1 ran all_reduce" in text
    if mode == "size":
        assert "[[0]]" in text and "[[4096]]" in text
    if mode in ("skip", "stop"):
        assert "never entered collective 4 (all_reduce)" in clause(gap)


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_the_json_dump_gives_the_same_verdict_without_frames(mode):
    gap = check(analyze(records(mode, "rank%d.json", "file")), mode)
    assert gap.frames == []


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_the_debug_servers_answers_give_the_same_verdict(mode):
    recs = records(mode, "server/rank%d.json", "debug-server")
    if mode == "stop":
        # the stopped rank's worker cannot answer: ranks 0-1 wait at collective 4 for the rank not read
        assert [r["rank"] for r in recs] == [0, 1]
        gap = analyze(recs)[0]
        assert (gap.kind, gap.ranks, gap.seq, gap.op, gap.unread_behind) == ("behind", [2], 4, "all_reduce", True)
        assert "waiting in collective 4 (all_reduce) of group default_pg for rank 2" in clause(gap)
        return
    check(analyze(recs), mode)


@pytest.mark.parametrize("mode", ["skip", "op", "size"])
def test_the_frontend_page_holds_every_ranks_record(mode):
    dumps = fr.frontend_dumps((FR / mode / "frontend.html").read_text())
    assert [rank for rank, _d in dumps] == [0, 1, 2]
    check(analyze([fr.rank_record(d, rank=rank, source="frontend") for rank, d in dumps]), mode)


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_nccl_dump_files_give_the_same_verdict_with_started_ids(mode):
    recs = records("nccl_" + mode, "nccl_trace_rank_%d", "dump-file")
    assert {r["backend"] for r in recs} == {"nccl"}
    assert all(g["last_started"] is not None for r in recs for g in r["groups"])
    check(analyze(recs), mode)


def test_the_record_keeps_the_entries_around_the_last_seq_ids_and_counts_the_rest():
    rec = records("skip", "rank%d.pkl", "file")[0]
    group = rec["groups"][0]
    assert (group["last_enqueued"], group["last_started"], group["last_completed"]) == (4, None, 3)
    assert group["ranks"] == [0, 1, 2]
    assert [e["seq"] for e in rec["entries"]] == [2, 3, 4] and rec["entries_total"] == 4
    assert len(rec["entries"][-1]["frames"]) <= fr.FRAMES


# --- hostile input: one-line errors, nothing run ------------------------------------------------

# a pickle (protocol 4, as torch writes) whose "x" calls os.system("touch ...") when loaded: a
# GLOBAL of posix.system and a REDUCE, written out as bytes
HOSTILE = b'\x80\x04\x95Z\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x07entries\x94]\x94\x8c\tpg_status\x94}\x94\x8c\x01x\x94\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\x1dtouch /tmp/stalldiag-fr-pwned\x94\x85\x94R\x94u.'


def test_a_pickle_naming_a_callable_is_refused_and_nothing_runs(tmp_path):
    with pytest.raises(fr.DumpError) as err:
        fr.loads(HOSTILE)
    assert "posix.system" in str(err.value) or "os.system" in str(err.value)
    assert not os.path.exists("/tmp/stalldiag-fr-pwned")


@pytest.mark.parametrize("raw,words", [
    (b"", "empty"), (b"\x80\x04\x95garbage", "not a readable pickle"), (b"<html>", "neither a pickle nor JSON"),
    (b"[1, 2]", "not a Flight Recorder dump"), (pickle.dumps({"entries": 3}), "not a Flight Recorder dump"),
])
def test_bad_dumps_give_one_line(raw, words):
    with pytest.raises(fr.DumpError) as err:
        fr.loads(raw)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_truncated_real_dump_is_one_line():
    raw = (FR / "skip" / "rank0.pkl").read_bytes()
    with pytest.raises(fr.DumpError) as err:
        fr.loads(raw[:len(raw) // 2])
    assert "\n" not in str(err.value)


# --- the probe's NCCL paths, on saved dumps -----------------------------------------------------

def test_a_dump_file_named_by_the_ranks_environment_is_read(tmp_path):
    for rank in RANKS:
        (tmp_path / ("fr_%d" % rank)).write_bytes((FR / "nccl_skip" / ("nccl_trace_rank_%d" % rank)).read_bytes())
    env = {"TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "fr_")}
    # our own process stands for each rank: its root is /, it has no debug server
    got = probe.collect([(os.getpid(), rank, env) for rank in RANKS], tree=[os.getpid()], host="h")
    assert got["armed"] == ["dump-file"] and got["unread"] == [] and got["next_time"] == []
    assert [(r["rank"], r["source"], r["where"]) for r in got["ranks"]] == [
        (rank, "dump-file", str(tmp_path / ("fr_%d" % rank))) for rank in RANKS]
    check(analyze(got["ranks"]), "skip")


def test_a_job_that_armed_nothing_is_told_what_to_set(tmp_path):
    got = probe.collect([(os.getpid(), 0, {})], tree=[os.getpid()], host="h")
    if got["ranks"]:
        pytest.skip("a /tmp/nccl_trace_rank_0 of another job exists on this machine")
    assert got["armed"] == [] and any("start_debug_server" in line for line in got["next_time"])
    assert any("TORCH_NCCL_DEBUG_INFO_PIPE_FILE" in line for line in got["next_time"])


def test_a_fifo_dump_is_asked_for_and_copied_at_once(tmp_path, monkeypatch):
    pipe, dump = str(tmp_path / "pipe_0.pipe"), str(tmp_path / "trace_0")
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)      # NCCL's watchdog holds it open
    saved = (FR / "nccl_stop" / "nccl_trace_rank_2").read_bytes()
    real_sleep = probe.time.sleep
    asked = []

    def watchdog(seconds):
        # what the watchdog does on its next turn: it reads the request and dumps
        if not asked:
            asked.append(os.read(reader, 16))
            with open(dump, "wb") as f:
                f.write(saved)
        real_sleep(min(seconds, 0.01))

    monkeypatch.setattr(probe.time, "sleep", watchdog)
    try:
        got = probe._ask_fifo(os.getpid(), 2, pipe, dump)
    finally:
        os.close(reader)
    assert asked == [b"1\n"]
    assert isinstance(got, dict) and got["source"] == "fifo" and got["bytes"] == len(saved)
    assert got["groups"][0]["last_enqueued"] == 3


def test_a_fifo_nobody_reads_is_left_alone(tmp_path):
    pipe = str(tmp_path / "p0.pipe")
    os.mkfifo(pipe)
    got = probe._ask_fifo(os.getpid(), 0, pipe, str(tmp_path / "t0"))
    assert "nobody reads it" in got


def test_no_fifo_no_file_nothing_said(tmp_path):
    assert probe._ask_fifo(os.getpid(), 0, str(tmp_path / "none.pipe"), str(tmp_path / "t0")) is None
    assert probe._read_dump_file(os.getpid(), 0, str(tmp_path / "t0")) is None


def test_our_own_process_has_no_worker_server():
    assert probe.worker_port(os.getpid()) is None
