"""Where a busy thread's CPU goes (diagnosis/hot.py), on stacks shaped as py-spy gives them."""
from stalldiag.diagnosis.hot import hot_code, hot_text

SITE = "/venv/lib/python3.11/site-packages/"
STDLIB = "/usr/lib/python3.11/"

# a DataLoader worker forked from the training loop: its outer frames are the parent's, frozen at
# the fork (leaf first, as py-spy gives them)
PARENT = [("main_worker", "/work/imagenet/main.py", 301), ("main", "/work/imagenet/main.py", 140),
          ("<module>", "/work/imagenet/main.py", 560)]
FORK = [("_launch", STDLIB + "multiprocessing/popen_fork.py", 71), ("Popen.__init__", STDLIB + "multiprocessing/popen_fork.py", 19),
        ("train", "/work/imagenet/main.py", 330)]
WORKER = [("_worker_loop", SITE + "torch/utils/data/_utils/worker.py", 300),
          ("_bootstrap", STDLIB + "multiprocessing/process.py", 314)]
SEED = [("_generate_state", SITE + "torch/utils/data/_utils/worker.py", 120)]
FORMAT = [("extract_stack", STDLIB + "traceback.py", 227), ("format_stack", STDLIB + "traceback.py", 213)]


class View:
    def __init__(self, stacks):
        self.stacks = stacks


def test_a_forked_worker_is_named_by_its_own_hot_code_not_its_parents_loop():
    stack = lambda leaf: leaf + FORMAT + SEED + WORKER + FORK + PARENT
    view = View([(stack([("getline", STDLIB + "linecache.py", 30)]), 6), (stack([]), 3),
                 (stack([("checkcache", STDLIB + "linecache.py", 60)]), 2), (WORKER + FORK + PARENT, 1)])
    hot = hot_code(view)
    assert hot.call[0][0] == "format_stack" and hot.caller[0] == "_generate_state"
    assert round(hot.call[1], 2) == round(11 / 12, 2)
    assert all("main.py" not in frame[1] for frame, _share in hot.path)   # the parent's frames are not its work
    text = hot_text(hot)
    assert "format_stack (traceback.py:213)" in text and "called from _generate_state" in text
    assert "getline 50%" in text


def test_the_users_own_hot_function_is_its_deepest_frame():
    user = [("collatz", "/work/loop.py", 8), ("run", "/work/loop.py", 14), ("<module>", "/work/loop.py", 20)]
    hot = hot_code(View([(user, 10), (user[1:], 1)]))
    assert hot.call[0][0] == "collatz" and hot.caller[0] == "run"


def test_native_code_is_named_where_the_path_enters_it():
    python = [("Tensor.backward", SITE + "torch/_tensor.py", 623), ("step", "/work/train.py", 40)]
    native = [("mkl_blas_sgemm", "/venv/lib/libmkl_core.so.2", 0), ("at::native::addmm_", SITE + "torch/lib/libtorch_cpu.so", 0)]
    hot = hot_code(View([(native + python, 9), (python, 1)]))
    assert hot.native and hot.call[0][0] == "mkl_blas_sgemm" and hot.caller[0] == "at::native::addmm_"


def test_too_few_samples_name_nothing():
    assert hot_code(View([([("f", "/work/x.py", 1)], 2)])) is None
