"""Read a Flight Recorder dump (PyTorch's record of a process's collectives) into the capture's
plain form, safely: a pickle (NCCL's dump files and FIFO, `_dump_fr_trace()`) is read by an
unpickler that builds only plain containers and scalars and refuses every class or function a
pickle names (a dump file on disk could have been written by anyone able to write /tmp), and a
JSON body (the debug server's routes, `_dump_fr_trace_json()`) by json.  Nothing here imports
torch.

A dump (format version 2.x):
  version, pg_config {name: {name, desc, ranks}}, pg_status {pg_id: {last_enqueued_collective,
  last_started_collective, last_completed_collective}}, entries [{record_id, pg_id,
  process_group [name, desc], collective_seq_id, p2p_seq_id, profiling_name ("gloo:all_reduce",
  "nccl:all_reduce"), input_sizes, input_dtypes, output_sizes, output_dtypes, state, retired,
  is_p2p, frames [{name, filename, line}] (pickles only), timeout_ms, ...}]

rank_record() keeps of it, per process group, the last enqueued, started and completed sequence
ids and the entries around them (AROUND before the last completed, and every one after it), each
with at most FRAMES frames: a 2000-entry ring of a long job is ~1 MB, its record here ~2 KB.
"""
import io
import json
import pickle

MAX_DUMP_BYTES = 64 << 20     # a dump larger than this is not read (2000 entries with frames: ~1-2 MB)
AROUND = 2                    # completed entries kept before the last completed one, per group
MAX_PENDING = 8               # entries kept after the last completed one, per group
FRAMES = 8                    # frames kept per entry, innermost first


class DumpError(ValueError):
    """A dump that cannot be read: its one-line reason."""


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, strings, bytes, numbers, booleans and None; any global a pickle
    names (a class, a function: what makes unpickling run code) is refused."""

    def find_class(self, module, name):
        raise DumpError("the pickle names %s.%s: only plain containers and scalars are read" % (module, name))

    def persistent_load(self, pid):
        raise DumpError("the pickle uses persistent ids: only plain containers and scalars are read")


def loads(raw):
    """The dump of raw bytes (a pickle or JSON), as plain data; DumpError on anything else."""
    if not isinstance(raw, (bytes, bytearray)):
        raise DumpError("not bytes")
    if len(raw) > MAX_DUMP_BYTES:
        raise DumpError("%d bytes: larger than the %d read" % (len(raw), MAX_DUMP_BYTES))
    head = bytes(raw[:1])
    if not raw.strip():
        raise DumpError("empty")
    if head == b"\x80":
        try:
            data = _PlainUnpickler(io.BytesIO(bytes(raw))).load()
        except DumpError:
            raise
        except Exception as exc:   # truncated, corrupt: one line, never a traceback
            raise DumpError("not a readable pickle (%s: %s)" % (type(exc).__name__, str(exc)[:120]))
    else:
        try:
            data = json.loads(bytes(raw).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise DumpError("neither a pickle nor JSON (%s)" % str(exc)[:120])
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise DumpError("not a Flight Recorder dump (no entries list)")
    if "pg_status" not in data and "entries" not in data:
        raise DumpError("not a Flight Recorder dump (neither pg_status nor entries)")
    return data


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _seq(value):
    """A sequence id; -1 (never) is None."""
    n = _int(value)
    return None if n is None or n < 0 else n


def _ranks(text):
    """pg_config's ranks: "[0, 1, 2]" (a string) or a list."""
    if isinstance(text, list):
        return [r for r in (_int(x) for x in text) if r is not None]
    if isinstance(text, str):
        try:
            return [int(x) for x in text.strip("[] ").split(",") if x.strip()]
        except ValueError:
            return None
    return None


def _shape(value):
    """Sizes as a list of lists of ints (JSON and pickles agree on this)."""
    if not isinstance(value, (list, tuple)):
        return None
    return [[_int(d) for d in s] if isinstance(s, (list, tuple)) else _int(s) for s in value]


def _strings(value):
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else None


def _frames(frames):
    out = []
    for f in (frames or [])[:FRAMES]:
        if isinstance(f, dict):
            out.append([str(f.get("name") or "?"), str(f.get("filename") or "?"), _int(f.get("line"))])
    return out


def _entry(e):
    name = str(e.get("profiling_name") or "?")
    backend, _, op = name.partition(":")
    group = list(e.get("process_group")) if isinstance(e.get("process_group"), (list, tuple)) else [None, None]
    p2p = bool(e.get("is_p2p"))
    return {
        "pg_id": str(e.get("pg_id")) if e.get("pg_id") is not None else None,
        "group": [str(x) if x is not None else None for x in (list(group) + [None, None])[:2]],
        "seq": _int(e.get("p2p_seq_id") if p2p else e.get("collective_seq_id")),
        "p2p": p2p,
        "op": op or backend,
        "backend": backend if op else None,
        "in_sizes": _shape(e.get("input_sizes")), "in_dtypes": _strings(e.get("input_dtypes")),
        "out_sizes": _shape(e.get("output_sizes")), "out_dtypes": _strings(e.get("output_dtypes")),
        "state": e.get("state"), "retired": e.get("retired"),
        "timeout_ms": _int(e.get("timeout_ms")),
        "frames": _frames(e.get("frames")),
    }


def rank_record(data, rank=None, source=None, where=None):
    """The capture's record of one rank's dump: {rank, source, where, version, backend, groups
    [{pg_id, name, desc, ranks, last_enqueued, last_started, last_completed}], entries [...],
    entries_total}."""
    entries = [e for e in data.get("entries") or [] if isinstance(e, dict)]
    parsed = [_entry(e) for e in entries]
    names = {}
    for e in parsed:
        if e["pg_id"] is not None:
            names.setdefault(e["pg_id"], e["group"])
    config = data.get("pg_config") if isinstance(data.get("pg_config"), dict) else {}
    groups = []
    status = data.get("pg_status") if isinstance(data.get("pg_status"), dict) else {}
    for pg_id, st in sorted(status.items(), key=lambda kv: str(kv[0])):
        if not isinstance(st, dict):
            continue
        pg_id = str(pg_id)
        name, desc = names.get(pg_id, [pg_id, None])
        conf = config.get(name) or (next(iter(config.values())) if len(config) == 1 else None) or {}
        groups.append({
            "pg_id": pg_id, "name": name, "desc": desc or conf.get("desc") or None,
            "ranks": _ranks(conf.get("ranks")),
            "last_enqueued": _seq(st.get("last_enqueued_collective")),
            "last_started": _seq(st.get("last_started_collective")),
            "last_completed": _seq(st.get("last_completed_collective")),
        })
    kept = []
    for group in groups:
        mine = [e for e in parsed if e["pg_id"] == group["pg_id"] and not e["p2p"]]
        done = group["last_completed"] or 0
        before = [e for e in mine if e["seq"] is not None and e["seq"] <= done][-AROUND:]
        after = [e for e in mine if e["seq"] is not None and e["seq"] > done][:MAX_PENDING]
        kept += before + after
    backends = {e["backend"] for e in parsed if e["backend"]}
    return {"rank": rank, "source": source, "where": where, "version": str(data.get("version") or "?"),
            "backend": backends.pop() if len(backends) == 1 else (sorted(backends) or None),
            "groups": groups, "entries": kept, "entries_total": len(entries)}


def read_record(raw, rank=None, source=None, where=None):
    """rank_record() of raw dump bytes; DumpError when they are not a dump."""
    return rank_record(loads(raw), rank=rank, source=source, where=where)


def frontend_dumps(html):
    """[(rank, dump dict)] of the debug server frontend's /fr_trace_json page: one <h2>Rank N: URL</h2>
    and one <pre> of HTML-escaped JSON per rank (a rank that did not answer has its error text)."""
    import html as html_mod
    import re
    out = []
    for m in re.finditer(r"<h2>Rank (\d+):[^<]*</h2>\s*(?:<[^>]+>\s*)*?<pre>(.*?)</pre>", html, re.S):
        try:
            data = json.loads(html_mod.unescape(m.group(2)))
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append((int(m.group(1)), data))
    return out
