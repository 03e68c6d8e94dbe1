"""Configuration that changes how PyTorch, CUDA, NCCL, OpenMP and Python run: the environment
variables and interpreter flags an expert checks first, what each does, and when it explains a
verdict.

A knob alone is a hint, never a verdict: a row of the registry reads a knob only beside the
measured signal it explains (CUDA_LAUNCH_BLOCKING beside a host thread waiting on every kernel,
OMP_NUM_THREADS beside CPUs oversubscribed).  Only the variables named here are read from a
process's environment (redact.ENV_ALLOWED adds them to the ranks' variables); their values are
redacted by the same rules as a command line.

Each row: (name, area, effect, when): `effect` says what the knob does, in the words a report
uses; `when(value)` says whether the value set turns the effect on.
"""
from collections import namedtuple

Knob = namedtuple("Knob", "name area effect when")


def _on(value):
    return str(value).strip().lower() not in ("", "0", "false", "no", "off", "none")


def _positive_int(value):
    try:
        return int(str(value).split(",")[0]) > 0
    except ValueError:
        return False


def _any(value):
    return str(value).strip() != ""


KNOBS = (
    # --- CUDA and PyTorch's CUDA -------------------------------------------------------------------
    Knob("CUDA_LAUNCH_BLOCKING", "CUDA", "every kernel launch waits for the kernel to finish: the host thread "
         "waits on each kernel and the GPU idles between them", _on),
    Knob("TORCH_USE_CUDA_DSA", "PyTorch", "device-side assertions: every kernel checks and reports, slower "
         "kernels", _on),
    Knob("PYTORCH_NO_CUDA_MEMORY_CACHING", "PyTorch", "the CUDA caching allocator is off: every allocation is "
         "a cudaMalloc and a device synchronisation", _on),
    Knob("PYTORCH_CUDA_ALLOC_CONF", "PyTorch", "the CUDA allocator's settings (expandable segments, garbage "
         "collection threshold, max split size)", _any),
    Knob("CUDA_MODULE_LOADING", "CUDA", "EAGER loads every kernel of every library at start (minutes with "
         "large libraries)", lambda v: str(v).upper() == "EAGER"),
    Knob("CUDA_DEVICE_MAX_CONNECTIONS", "CUDA", "the hardware queues kernels are launched through (1 "
         "serialises streams)", _any),
    # --- NCCL and torch.distributed -------------------------------------------------------------------
    Knob("NCCL_DEBUG", "NCCL", "NCCL logs (INFO, TRACE: a line per call, slowing every collective)", _any),
    Knob("NCCL_BLOCKING_WAIT", "NCCL", "collectives are waited for by a CPU thread polling the work "
         "(a spin), not by the stream", _on),
    Knob("TORCH_NCCL_BLOCKING_WAIT", "NCCL", "collectives are waited for by a CPU thread polling the work "
         "(a spin), not by the stream", _on),
    Knob("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL", "what the watchdog does when a collective times out "
         "(0: nothing: a hung collective is never aborted)", _any),
    Knob("NCCL_ASYNC_ERROR_HANDLING", "NCCL", "what the watchdog does when a collective times out "
         "(0: nothing: a hung collective is never aborted)", _any),
    Knob("TORCH_NCCL_ENABLE_MONITORING", "NCCL", "the heartbeat monitor that kills a rank whose watchdog "
         "hangs", _any),
    Knob("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "NCCL", "how long the monitor waits for the watchdog", _any),
    Knob("TORCH_DISTRIBUTED_DEBUG", "torch.distributed", "DETAIL checks every collective's shapes across "
         "ranks (a store round trip per collective)", _any),
    Knob("NCCL_P2P_DISABLE", "NCCL", "peer-to-peer over NVLink/PCIe off: transfers go through host memory",
         _on),
    Knob("NCCL_IB_DISABLE", "NCCL", "InfiniBand off: traffic goes over TCP sockets", _on),
    Knob("NCCL_SOCKET_IFNAME", "NCCL", "the network interfaces NCCL's sockets use", _any),
    Knob("GLOO_SOCKET_IFNAME", "gloo", "the network interfaces gloo's sockets use", _any),
    Knob("TORCH_FR_BUFFER_SIZE", "torch.distributed", "the Flight Recorder's ring of collectives (0: off)",
         _any),
    Knob("TORCH_NCCL_TRACE_BUFFER_SIZE", "torch.distributed", "the Flight Recorder's ring of collectives "
         "(older name; 0: off)", _any),
    Knob("TORCH_FR_DUMP_TEMP_FILE", "torch.distributed", "where each rank's Flight Recorder dump is written "
         "(a prefix: the rank number is appended)", _any),
    Knob("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "torch.distributed", "where each rank's Flight Recorder dump "
         "is written (older name)", _any),
    Knob("TORCH_NCCL_DUMP_ON_TIMEOUT", "torch.distributed", "a Flight Recorder dump when a collective times "
         "out", _any),
    Knob("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "torch.distributed", "a per-rank FIFO: writing to it asks for a "
         "Flight Recorder dump", _any),
    # --- threads -----------------------------------------------------------------------------------------
    Knob("OMP_NUM_THREADS", "OpenMP", "threads per process for OpenMP (PyTorch's intra-op pool)", _positive_int),
    Knob("MKL_NUM_THREADS", "MKL", "threads per process for MKL", _positive_int),
    Knob("OPENBLAS_NUM_THREADS", "OpenBLAS", "threads per process for OpenBLAS", _positive_int),
    Knob("OMP_WAIT_POLICY", "OpenMP", "ACTIVE: idle OpenMP threads spin on a CPU instead of sleeping",
         lambda v: str(v).upper() == "ACTIVE"),
    Knob("GOMP_SPINCOUNT", "OpenMP", "how long idle OpenMP threads spin before sleeping", _any),
    Knob("KMP_BLOCKTIME", "OpenMP", "how long idle Intel OpenMP threads spin before sleeping (ms)", _any),
    Knob("TOKENIZERS_PARALLELISM", "Hugging Face", "the tokenizers' Rust thread pool (after a fork: a "
         "deadlock the library warns of)", _any),
    # --- torch.compile ---------------------------------------------------------------------------------
    Knob("TORCH_COMPILE_DEBUG", "torch.compile", "debug artifacts for every compiled graph (slower "
         "compiles, files written)", _on),
    Knob("TORCH_LOGS", "torch.compile", "compile-time logging (+dynamo, +inductor: verbose)", _any),
    Knob("TORCHDYNAMO_VERBOSE", "torch.compile", "verbose dynamo errors", _on),
    Knob("TORCHINDUCTOR_COMPILE_THREADS", "torch.compile", "inductor's compile workers (1: compiles one "
         "kernel at a time, in the training process)", _any),
    Knob("TORCHINDUCTOR_MAX_AUTOTUNE", "torch.compile", "max-autotune: benchmarks many kernel configs "
         "(minutes of compiling)", _on),
    Knob("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "torch.compile", "no compile cache: every run compiles from "
         "scratch", _on),
    Knob("TORCHINDUCTOR_CACHE_DIR", "torch.compile", "where inductor's compile cache lives (a slow or "
         "shared file system slows every compile)", _any),
    Knob("TRITON_CACHE_DIR", "Triton", "where Triton's kernel cache lives", _any),
    # --- Python ------------------------------------------------------------------------------------------
    Knob("PYTHONDEVMODE", "Python", "development mode: debug hooks on the memory allocator, more checks, "
         "slower", _on),
    Knob("PYTHONMALLOC", "Python", "the memory allocator (debug: every allocation checked)", _any),
    Knob("PYTHONTRACEMALLOC", "Python", "tracemalloc records a traceback of every allocation (much slower)",
         _positive_int),
    Knob("PYTHONFAULTHANDLER", "Python", "faulthandler dumps tracebacks on a fatal signal", _on),
    Knob("PYTHONPROFILEIMPORTTIME", "Python", "every import is timed and printed", _on),
    Knob("COVERAGE_PROCESS_START", "coverage.py", "coverage measures every line of every process (a trace "
         "function: several times slower)", _any),
)

BY_NAME = {k.name: k for k in KNOBS}
NAMES = tuple(k.name for k in KNOBS)

# Interpreter flags on a Python command line that change how it runs (-X options and switches).
FLAGS = {
    "-X dev": "development mode (debug allocator hooks, more checks)",
    "-X tracemalloc": "tracemalloc records every allocation's traceback",
    "-X importtime": "every import is timed",
    "-X faulthandler": "faulthandler on",
    "-u": "unbuffered stdout and stderr",
    "-O": "asserts removed",
}


def set_knobs(env):
    """[(Knob, value)] of the knobs an environment turns on, in the table's order."""
    env = env or {}
    return [(knob, env[knob.name]) for knob in KNOBS if knob.name in env and knob.when(env[knob.name])]


def interpreter_flags(cmdline):
    """The FLAGS a Python command line sets, in the order given."""
    argv = list(cmdline or [])
    if not argv or "python" not in argv[0].rsplit("/", 1)[-1]:
        return []
    out, i = [], 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-X" and i + 1 < len(argv):
            name, i = "-X " + argv[i + 1].split("=")[0], i + 1
        elif arg.startswith("-X") and len(arg) > 2:
            name = "-X " + arg[2:].split("=")[0]
        elif arg in ("-u", "-O", "-OO"):
            name = arg[:2]
        elif not arg.startswith("-"):
            break           # the script: what follows is its own arguments
        else:
            name = None
        if name in FLAGS and name not in out:
            out.append(name)
        i += 1
    return out


def int_value(env, name):
    try:
        return int(str((env or {}).get(name, "")).split(",")[0])
    except ValueError:
        return None
