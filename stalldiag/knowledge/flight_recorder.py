"""PyTorch's Flight Recorder: where a job keeps the record of its collectives, and what arms each
way of reading it from outside (probes/flight_recorder.py reads it; diagnosis/collectives.py
compares the ranks' records).

The recorder runs by default (a ring of TORCH_FR_BUFFER_SIZE entries per process, 2000 in recent
releases; TORCH_NCCL_TRACE_BUFFER_SIZE before) but leaves the process only where the job armed it:
  - torch.distributed.debug.start_debug_server(): a worker server on every rank (a C++ HTTP
    server whose threads are named pt_workerserver), route /handler/fr_trace_json (gloo and the
    CPU record; /handler/dump_nccl_trace_json where NCCL is built in); a frontend on rank 0
    (port 25999 by default: /fr_trace_json, /fr_trace_nccl_json) and, with dump_dir, periodic
    dumps fr_trace_<time>.txt
  - NCCL: a pickle per rank written on a timeout to TORCH_FR_DUMP_TEMP_FILE<rank> (alias
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default /tmp/nccl_trace_rank_), and one written on demand
    when anything is written to the FIFO <TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe
"""

# the environment variables read from each process (redact.ENV_ALLOWED adds them)
DUMP_FILE_VARS = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
PIPE_VARS = ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE",)
BUFFER_VARS = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
DUMP_ON_TIMEOUT_VARS = ("TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_FR_DUMP_ON_TIMEOUT")
ENV_VARS = DUMP_FILE_VARS + PIPE_VARS + BUFFER_VARS + DUMP_ON_TIMEOUT_VARS

DEFAULT_DUMP_PREFIX = "/tmp/nccl_trace_rank_"
WORKER_THREAD = "pt_workerserver"        # the comm of the debug server's worker threads
FR_ROUTE = "/handler/fr_trace_json"      # gloo and the CPU record (a JSON object)
NCCL_ROUTE = "/handler/dump_nccl_trace_json?onlyactive=false"
FRONTEND_ROUTE = "/fr_trace_json"        # the frontend: every rank's JSON in an HTML page
DEFAULT_FRONTEND_PORT = 25999

# what to set next time, said when the job armed none of the ways out
ARM_IT = (
    "start PyTorch's debug server on every rank after init_process_group(): "
    "torch.distributed.debug.start_debug_server() (needs aiohttp and Jinja2; "
    "add dump_dir=DIR for periodic dumps)",
    "with NCCL: TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/fr_pipe_ (a dump on demand) and "
    "TORCH_FR_DUMP_TEMP_FILE=/tmp/fr_trace_rank_ with TORCH_NCCL_DUMP_ON_TIMEOUT=1 (a dump on timeout)",
)
