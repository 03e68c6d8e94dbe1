"""Processes recognised by their command: launchers, compilers, workers.

Each row: (framework, field, pattern, role, meaning).  ``field`` is "comm"
(the kernel's 15-character name, matched whole) or "cmdline" (the joined
command line, searched).  The first matching row gives the role; processes
matching none are "main" (the inspected root) or "child".
"""
import re
from collections import namedtuple

ProcessPattern = namedtuple("ProcessPattern", "framework field pattern role meaning")
_P = ProcessPattern

PROCESS_PATTERNS = [
    _P("DataLoader", "comm", r"pt_data_worker", "dataloader-worker",
       "a PyTorch DataLoader worker (the worker renames its main thread)"),
    _P("torch.distributed", "comm", r"pt_elastic", "launcher", "torchrun's elastic agent (renamed main thread)"),
    _P("torch.distributed", "cmdline", r"torch[./]distributed[./](run|launch)\b|(^|/)torchrun\b", "launcher",
       "torchrun / elastic agent that starts the ranks"),
    _P("accelerate", "cmdline", r"(^|/)accelerate\s+launch\b|accelerate[./]commands[./]launch", "launcher",
       "Hugging Face accelerate launcher"),
    _P("mpi", "comm", r"mpirun|mpiexec|orterun|prterun|hydra_pmi_proxy", "launcher", "MPI launcher (Open MPI, MPICH)"),
    _P("slurm", "comm", r"slurmstepd", "launcher", "Slurm's step daemon: it starts the tasks of one srun step"),
    _P("shell", "comm", r"bash|sh|dash|zsh|ksh|fish", "launcher", "a shell running the job"),
    _P("torch.compile", "cmdline", r"torch[./]_inductor[./]compile_worker", "compile-worker",
       "inductor's compile-worker pool (SubprocPool sidecar or its workers)"),
    _P("python", "cmdline", r"multiprocessing[./](resource_tracker|semaphore_tracker|forkserver)\b", "mp-helper",
       "multiprocessing's resource tracker or fork server: a helper every pool starts; it holds the pipe ends it "
       "inherited and writes to none of them"),
    _P("compiler", "comm", r"gcc|g\+\+|cc|c\+\+|cc1|cc1plus|clang|clang\+\+|ld|ld\.lld|ld\.gold|as|collect2|"
       r"ptxas|nvcc|cicc|nvlink|fatbinary", "compiler", "a C/C++/CUDA compiler or linker"),
]

_COMPILED = [(row, re.compile(row.pattern)) for row in PROCESS_PATTERNS]

# Native threads torch.distributed starts in every rank (gloo's loops, NCCL's watchdog, the TCP
# store): a process with one is a rank even when no RANK variable says so (torch.multiprocessing
# spawn, or init_process_group(rank=...) from a script's own launcher).
DISTRIBUTED_THREADS = re.compile(r"^(pt_gloo_runloop|gloo_tcp_loop|pt_nccl_watchdg|pt_nccl_heartbt|"
                                 r"pt_tcpstore_uv|pt_tcpstore)$")


def runs_distributed(thread_names):
    return any(DISTRIBUTED_THREADS.match(name or "") for name in thread_names)


def match_process(comm, cmdline, rows=None):
    """The first row matching a process, or None."""
    joined = " ".join(cmdline or [])
    compiled = _COMPILED if rows is None else [(row, re.compile(row.pattern)) for row in rows]
    for row, regex in compiled:
        if row.field == "comm":
            if comm and regex.fullmatch(comm):
                return row
        elif regex.search(joined):
            return row
    return None
