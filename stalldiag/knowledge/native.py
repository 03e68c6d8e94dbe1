"""Known native CPU sinks: what a native function (or the library it is in) does, in the words an
engineer would use.  Matched on the symbol py-spy --native gives, else on the library's file name.
Symbols are the libraries' own: CPython's (Python/ceval.c, Modules/_sre, gcmodule.c, _pickle.c),
PyTorch's (at::native, c10, torch::autograd), the OpenMP runtimes' (libgomp's gomp_*, LLVM/Intel's
__kmp_*), BLAS (MKL, OpenBLAS), the CUDA driver and runtime, glibc.
"""
import re

# (pattern on the symbol, what it is); first match wins
SYMBOLS = (
    (r"^(_PyEval_EvalFrameDefault|PyEval_EvalFrame|_PyEval_Vector|_PyFunction_Vectorcall|PyObject_Vectorcall|"
     r"_PyObject_MakeTpCall|method_vectorcall|cfunction_vectorcall|slot_tp_call)",
     "the interpreter running Python bytecode"),
    (r"^(sre_|_sre_|SRE_|pattern_)", "CPython's regex engine (re)"),
    (r"^(gc_collect|collect_generations|_PyObject_GC_|visit_decref|subtract_refs|move_unreachable|"
     r"update_refs|deduce_unreachable|gc_collect_main)", "CPython's garbage collector"),
    (r"^(_pickle_|save|load_|Pickler_|Unpickler_|_Pickler_|_Unpickler_)", "pickle (serialization)"),
    (r"^(PyUnicode_|unicode_|_PyUnicode|ascii_decode|utf8_)", "CPython string handling"),
    (r"^(dict_|_PyDict_|insertdict|lookdict|PyDict_)", "CPython dict operations"),
    (r"^(list_|PyList_|_PyList_)", "CPython list operations"),
    (r"^(json|scanstring|encoder_|_json)", "the json module"),
    (r"^(deflate|inflate|crc32|adler32)", "zlib compression"),
    (r"^(png_|jpeg_|jpeg|decode_mcu|ImagingDecode|ImagingResample|ImagingConvert)", "image decoding (PIL/libjpeg/libpng)"),
    (r"^(gomp_barrier|gomp_team_barrier|gomp_thread|do_spin|do_wait|gomp_sem)", "the OpenMP runtime waiting at a barrier (libgomp)"),
    (r"^(__kmp_|__kmpc_|kmp_)", "the OpenMP runtime (LLVM/Intel libomp) waiting or scheduling"),
    (r"^(mkl_|MKL_|dgemm|sgemm|cblas_|gemm_|sgemm_|dgemm_|openblas|blas_thread|inner_thread|exec_blas)",
     "BLAS matrix multiplication"),
    (r"^(at::native::|at::_ops::|at::vec::|at::cpu::|at::internal::)", "a PyTorch CPU operator (ATen)"),
    (r"^(torch::autograd::|torch::autograd)", "PyTorch's autograd engine"),
    (r"^(c10::cuda::|at::cuda::|cudaStreamSynchronize|cudaDeviceSynchronize|cudaMemcpy|cudaEventSynchronize|"
     r"cuStreamSynchronize|cuCtxSynchronize|cuEventSynchronize|cuMemcpy)", "a wait for the GPU (CUDA synchronize/copy)"),
    (r"^(cudaLaunchKernel|cuLaunchKernel|cudaLaunch)", "CUDA kernel launches"),
    (r"^(c10::|at::)", "PyTorch's C++ core"),
    (r"^(torch::jit|torch::dynamo|torch::_inductor)", "PyTorch's compiler internals"),
    (r"^(__memmove|__memcpy|memcpy|memmove|__memset|memset)", "memory copies (libc)"),
    (r"^(malloc|free|_int_malloc|_int_free|calloc|realloc|tcache|sysmalloc)", "memory allocation (libc malloc)"),
    (r"^(__GI___pthread_mutex|pthread_mutex|__lll_lock|futex)", "a lock"),
    (r"^(ncclKernel|ncclProxy|ncclGroup|nccl)", "NCCL"),
)
_SYMBOLS = [(re.compile(p), what) for p, what in SYMBOLS]

# (pattern on the library's file name, what it is)
LIBRARIES = (
    (r"libcuda\.so|libcudart", "the CUDA driver/runtime"),
    (r"libnccl", "NCCL"),
    (r"libtorch_cuda|libc10_cuda", "PyTorch's CUDA code"),
    (r"libtorch_cpu|libtorch\.so|libc10\.so|libtorch_python", "PyTorch's C++ code"),
    (r"libgomp|libomp|libiomp", "the OpenMP runtime"),
    (r"libmkl|libopenblas|libblas", "BLAS"),
    (r"libpython|/python3", "the Python interpreter"),
    (r"libc\.so|libc-", "glibc"),
    (r"libz\.so", "zlib"),
    (r"_imaging|libjpeg|libpng|libwebp", "image decoding"),
)
_LIBRARIES = [(re.compile(p), what) for p, what in LIBRARIES]


def named(function):
    """Is this a symbol (not an address py-spy could not name)?"""
    return bool(function) and not function.startswith("0x")


def sink(function, library=""):
    """What a native function does ("CPython's regex engine"), or None when unknown."""
    for pattern, what in _SYMBOLS:
        if function and pattern.search(function):
            return what
    for pattern, what in _LIBRARIES:
        if library and pattern.search(library):
            return what
    return None


def library_of(path):
    """"libpython3.11" of "/usr/lib/libpython3.11.so.1.0"."""
    return (path or "").rsplit("/", 1)[-1].split(".so")[0]
