"""Why a GPU waits: what a host thread of the job does instead of keeping its GPU fed, checked
against PyTorch's, CUDA's and Triton's own code.

A GPU that is idle or narrow while the job's host thread is busy or blocked waits on that thread.
Each row is one such sink, recognised in the thread's stack samples by Python frames (file and
function, as knowledge/frames.py's rows), by the line of the user's own code it stands at, or by
native frames (where --native or --native-dumps took them).  The category is the one the
verdict files it under: a host-device synchronization or the allocator's is the GPU's (cuda), an
autotuner benchmarking candidates is compiling, an input pipeline that cannot keep up is the
CPU's (its workers are named by the DataLoader row of the walk, not here).

(name, category, python frames [(file regex, function regex)], user line regex, native symbol
regex, what it is, where it was read)
"""
from collections import namedtuple

from .frames import regex

Sink = namedtuple("Sink", "name category frames line native meaning source")

_S = Sink

SINKS = (
    _S("autotune", "compilation",
       ((r"triton/testing\.py$", r"^do_bench(_cudagraph)?$"),
        (r"triton/runtime/autotuner\.py$", r"^(Autotuner\.)?(run|_bench|prune_configs|benchmark)$"),
        (r"torch/_inductor/select_algorithm\.py$", r"benchmark"),
        (r"torch/_inductor/runtime/triton_heuristics\.py$", r"^(\w+\.)?(benchmark_all_configs|autotune_to_one_config|"
                                                            r"bench|coordinate_descent_tuning)$"),
        (r"torch/_inductor/runtime/coordinate_descent_tuner\.py$", r"."),
        (r"torch/_inductor/autotune_process\.py$", r"benchmark")),
       None, r"cudnnFind\w*Algorithm|cudnnGet\w*Algorithm_v7|at::native::\w*benchmark|cudnn_frontend::\w*[Ff]ind",
       "autotuning: candidate kernels benchmarked one after another (Triton's autotuner, inductor's "
       "max-autotune, cuDNN's benchmark mode with input shapes that keep changing)",
       "triton/testing.py do_bench; triton/runtime/autotuner.py Autotuner; torch/_inductor/select_algorithm.py "
       "AlgorithmSelectorCache.benchmark*; ATen's cudnn/Conv_v7.cpp (cudnnFind*) under torch.backends.cudnn.benchmark"),
    _S("anomaly-detection", "cuda",
       ((r"torch/fx/traceback\.py$", r"^format_stack$"),),
       None, r"AnomalyMode|PyAnomalyMetadata|AnomalyMetadata::store_stack",
       "autograd's anomaly detection: every operation of the forward records its Python stack, and the "
       "backward checks each result for NaN",
       "torch/csrc/autograd/python_anomaly_mode.cpp: PyAnomalyMetadata::store_stack calls "
       "torch.fx.traceback.format_stack for each node"),
    _S("empty-cache", "cuda",
       ((r"torch/cuda/memory\.py$", r"^empty_cache$"),),
       r"\bempty_cache\(", r"emptyCache|release_cached_blocks|cudaFree\b",
       "torch.cuda.empty_cache(): the caching allocator synchronizes and gives its cached blocks back, "
       "to allocate them again with cudaMalloc",
       "torch/cuda/memory.py empty_cache -> c10/cuda/CUDACachingAllocator.cpp emptyCache"),
    _S("allocator-retries", "cuda",
       (), None, r"garbage_collect_cached_blocks|release_available_cached_blocks|cudaMalloc(Async)?\b",
       "the caching allocator out of cached blocks: it frees and retries cudaMalloc (memory fragmented "
       "or near full)",
       "c10/cuda/CUDACachingAllocator.cpp: malloc -> release_available_cached_blocks / alloc_block retry"),
    _S("host-sync", "cuda",
       ((r"torch/cuda/__init__\.py$", r"^synchronize$"),
        (r"torch/cuda/streams\.py$", r"^(Stream|Event)\.synchronize$"),
        (r"torch/_tensor\.py$", r"^(Tensor\.)?(__bool__|__format__|__repr__|tolist|__float__|__int__|item)$"),
        (r"torch/_tensor_str\.py$", r".")),
       r"\.item\(\)|\.tolist\(\)|\.cpu\(\)|\.numpy\(\)|\bfloat\(|\bint\(|\bprint\(|torch\.cuda\.synchronize\(|"
       r"\bif\s+[\w.\[\]]+\s*(>|<|==|!=|:)|\.any\(\)|\.all\(\)|torch\.(nonzero|unique|masked_select)\(",
       r"cudaStreamSynchronize|cudaDeviceSynchronize|cuStreamSynchronize|cuCtxSynchronize|cudaEventSynchronize|"
       r"cuEventSynchronize|cudaMemcpy(Async)?\b|cuMemcpyDtoH|_local_scalar_dense|at::native::item",
       "a host-device synchronization in the step: the host waits for the GPU to drain its queue (a "
       ".item(), a tensor printed or tested in an if, a copy to the CPU, torch.cuda.synchronize()), and "
       "the GPU then waits for the host to launch the next kernels",
       "ATen's _local_scalar_dense (Tensor.item) and copy_ device-to-host call cudaStreamSynchronize / "
       "cudaMemcpyAsync + sync; torch/cuda/__init__.py synchronize"),
    _S("deterministic", "cuda",
       (), None, r"index_put_with_sort|_deterministic|scatter_add_deterministic|embedding_backward_cuda_kernel",
       "deterministic algorithms (torch.use_deterministic_algorithms): sorts and serialized scatters that keep "
       "few SMs busy",
       "ATen's Indexing.cu index_put_with_sort_kernel; ScatterGatherKernel deterministic paths"),
)

BY_NAME = {s.name: s for s in SINKS}


def sink_of_frames(frames, line_code=None):
    """The first sink one stack sample (leaf first) shows, or None: a Python frame of a row, a
    native frame of a row, or the user's innermost line (line_code) where the row reads lines."""
    for sink in SINKS:
        for frame in frames or []:
            filename, function = frame[1] or "", frame[0] or ""
            if filename.endswith((".py", ".pyx")) or filename.startswith("<"):
                if any(regex(f).search(filename) and regex(fn).search(function) for f, fn in sink.frames):
                    return sink
            elif sink.native and regex(sink.native).search(function):
                return sink
    for sink in SINKS:
        if sink.line and line_code and regex(sink.line).search(line_code):
            return sink
    return None


__all__ = ["SINKS", "BY_NAME", "Sink", "sink_of_frames"]
