"""Record the Flight Recorder of real hung gloo jobs into fixtures/flight_recorder/ (run by hand).

    python3 tools/record_flight_recorder.py [skip|op|size|stop ...]

For each mode, fixtures/workloads/gloo_flight_recorder.py runs under torchrun (3 ranks, gloo,
CPU) with PyTorch's debug server started; once it hangs at collective 4:
  MODE/rank{N}.pkl      each rank's own _dump_fr_trace() (a pickle, with frames), written in-process
  MODE/rank{N}.json     each rank's own _dump_fr_trace_json()
  MODE/server/rank{N}.json   what the rank's debug-server worker answers on /handler/fr_trace_json
                        (found the way the probe finds it; a stopped rank has none)
  MODE/frontend.html    the frontend's /fr_trace_json page (not for `stop`: it waits on the stopped rank)
  MODE/read_s.json      how long each read took
and, built from the gloo pickles, the same hang as NCCL would dump it (nccl_MODE/nccl_trace_rank_N:
the pickle format of NCCL's dump files and FIFO dumps, "nccl:" names, NCCL's states and started
sequence ids, a comm_lib_version).  The job is killed afterwards, whatever happens.
"""
import http.client
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from stalldiag.probes.flight_recorder import worker_port  # noqa: E402
from stalldiag.targets import descendants  # noqa: E402

WORKLOADS = os.path.join(ROOT, "fixtures", "workloads")
OUT = os.path.join(ROOT, "fixtures", "flight_recorder")
RANKS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(method, port, path, timeout=10):
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, path, headers={"Content-Length": "0"} if method == "POST" else {})
    body = conn.getresponse().read()
    conn.close()
    return body, round(time.monotonic() - t0, 4)


def record(mode):
    out = os.path.join(OUT, mode)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "server"))
    dumps = tempfile.mkdtemp(prefix="fr-dumps-")
    front = free_port()
    env = dict(os.environ, FR_DUMP_DIR=dumps, DEBUG_SERVER_PORT=str(front))
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % RANKS,
            "--master_port=%d" % free_port(), "gloo_flight_recorder.py", mode, "debug-server"]
    popen = subprocess.Popen(argv, cwd=WORKLOADS, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, env=env)
    timings = {}
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not all(
                os.path.exists(os.path.join(dumps, "rank%d.json" % r)) for r in range(RANKS)):
            time.sleep(0.5)
        for r in range(RANKS):
            for ext in ("pkl", "json"):
                shutil.copy(os.path.join(dumps, "rank%d.%s" % (r, ext)), os.path.join(out, "rank%d.%s" % (r, ext)))
        ranks = {}
        for pid in descendants(popen.pid):
            try:
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env_of = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
                with open("/proc/%d/stat" % pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if b"RANK" in env_of and b"debug-server" in open("/proc/%d/cmdline" % pid, "rb").read():
                rank = int(env_of[b"RANK"])
                if rank not in ranks or worker_port(pid):
                    ranks[rank] = (pid, state)
        for rank, (pid, state) in sorted(ranks.items()):
            port = worker_port(pid)
            if not port or state == "T":
                continue
            body, took = ask("POST", port, "/handler/fr_trace_json")
            with open(os.path.join(out, "server", "rank%d.json" % rank), "wb") as f:
                f.write(body)
            timings["worker rank%d" % rank] = took
        if mode != "stop":
            body, took = ask("GET", front, "/fr_trace_json", timeout=30)
            with open(os.path.join(out, "frontend.html"), "wb") as f:
                f.write(body)
            timings["frontend"] = took
        with open(os.path.join(out, "read_s.json"), "w") as f:
            json.dump(timings, f, indent=1, sort_keys=True)
        print("%s: %s" % (mode, timings))
    finally:
        tree = [popen.pid] + descendants(popen.pid)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        popen.wait()
        shutil.rmtree(dumps, ignore_errors=True)
    nccl_like(mode)


def nccl_like(mode):
    """The gloo hang as NCCL would dump it: each rank's pickle with nccl names, NCCL's states (a
    collective a rank entered and that did not complete is "started": its kernel runs, waiting on
    its peers) and started sequence ids, as NCCL's dump on timeout / FIFO writes it."""
    src, out = os.path.join(OUT, mode), os.path.join(OUT, "nccl_" + mode)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for r in range(RANKS):
        with open(os.path.join(src, "rank%d.pkl" % r), "rb") as f:
            d = pickle.load(f)
        d["comm_lib_version"] = "2.21.5"
        d["nccl_comm_state"] = {}
        for entry in d["entries"]:
            entry["profiling_name"] = entry["profiling_name"].replace("gloo:", "nccl:")
            done = entry.get("retired")
            entry["state"] = "completed" if done else "started"
            entry["time_discovered_started_ns"] = entry["time_created_ns"] + 20000
            entry["time_discovered_completed_ns"] = entry["time_created_ns"] + 90000 if done else None
        for status in d["pg_status"].values():
            status["last_started_collective"] = status["last_enqueued_collective"]
        with open(os.path.join(out, "nccl_trace_rank_%d" % r), "wb") as f:
            pickle.dump(d, f)


if __name__ == "__main__":
    for name in sys.argv[1:] or ["skip", "op", "size", "stop"]:
        record(name)
