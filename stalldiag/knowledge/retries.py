"""Retry loops: library helpers that retry, loops that catch errors, and what the errors mean.

A thread that sleeps between calls that fail is not idle by design, and a job that only
retries makes no progress however much it logs.  These tables say how to recognise one
from its stack (RETRY_FRAMES), from the source of the loop around its sleep (a while/for
body with an except clause, or a while loop polling a call), and what the failing call
or its error text is about (CALL_CATEGORY, ERROR_WORDS).
"""
import re

from .frames import canonical_file, regex

# (file pattern, function pattern, library): frames of helpers that sleep between attempts
RETRY_FRAMES = [
    (r"tenacity/(__init__|nap)\.py$", r"^((Base)?Retrying\.)?(__call__|iter|sleep)$", "tenacity"),
    (r"backoff/_sync\.py$", r"^retry$", "backoff"),
    (r"urllib3/util/retry\.py$", r"^(Retry\.)?(sleep|_sleep_backoff|sleep_for_retry)$", "urllib3 Retry"),
    (r"huggingface_hub/utils/_http\.py$", r"^http_backoff$", "huggingface_hub http_backoff"),
    (r"redis/retry\.py$", r"^(Retry\.)?call_with_retry$", "redis-py Retry"),
    (r"google/api_core/retry", r"^retry_target$", "google.api_core retry"),
    (r"botocore/retryhandler\.py$", r".", "botocore retries"),
]

# a while loop whose condition is a call: it polls until the call succeeds
POLL_LOOP = re.compile(r"^while\s+(not\s+)?\(?\s*[\w.\[\]]+\(.*\)")

# a loop that waits for a flag to be set (an attribute or a name, no call): `while not
# self._ready:`, `while state["loaded"] is None:`; not `while self.running:` (a loop until told to
# stop) nor a flag that asks to stop (a SIGTERM handler's `while not shutdown:` is idle by design)
FLAG_LOOP = re.compile(r"^while\s+(not\s+\(?\s*[A-Za-z_][\w.]*(\[[^\]]+\])?\s*\)?|"
                       r"[A-Za-z_][\w.]*(\[[^\]]+\])?\s*(is|==)\s*(None|False|0))\s*:")
STOP_FLAG = re.compile(r"stop|shut|exit|quit|term|kill|interrupt|cancel|signal", re.I)
# what such a flag, its loop and function say they wait for: a server coming up is the network
FLAG_NETWORK = re.compile(r"server|listen|port\b|socket|connect|http|grpc|rpc", re.I)

# syscalls whose failures are the waits themselves, not a failing operation
NOT_OPERATIONS = {"futex", "nanosleep", "clock_nanosleep", "select", "pselect6", "poll", "ppoll", "epoll_wait",
                  "epoll_pwait", "restart_syscall", "rt_sigreturn", "rt_sigsuspend", "wait4", "waitid",
                  "accept", "accept4", "recvfrom", "recvmsg", "read"}

# a failing syscall -> what the run is blocked on
CALL_CATEGORY = {
    "connect": "network", "sendto": "network", "sendmsg": "network", "getsockopt": "network",
    "open": "io", "openat": "io", "stat": "io", "newfstatat": "io", "statx": "io", "access": "io",
    "faccessat": "io", "faccessat2": "io", "rename": "io", "renameat2": "io", "unlink": "io", "mkdir": "io",
    "flock": "locks", "fcntl": "locks",
}
# an errno that says more than its syscall
ERRNO_CATEGORY = {"EEXIST": "locks", "EAGAIN": None, "EWOULDBLOCK": None}

# error words in an except clause, the lines it tries, a loop's condition or a log line -> category
# (first match wins; OSError says nothing: sockets, files and pipes all raise it)
ERROR_WORDS = [
    # (a loop's code is read too: a `timeout=` argument or an `eval_timeout` name is no failure)
    # a server that answered "not now" (429, a rate limit, a Retry-After): the network works, and
    # the job waits as it was told to (four blind writers of four filed such a loop under sleep)
    (re.compile(r"\b429\b|Too Many Requests|rate[- ]?limit|Retry-After|retry_after", re.I), "sleep"),
    # a failure that names its resource first (NAMED rows): GPU memory, a full disk, a fork refused
    # (a pids limit), a server's 5xx
    (re.compile(r"CUDA out of memory|OutOfMemoryError|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED|"
                r"out of memory on device|CUDA error: out of memory", re.I), "cuda"),
    (re.compile(r"Too many open files|EMFILE|Errno 24\b|No space left on device|ENOSPC|Errno 28\b|"
                r"Disk quota exceeded|EDQUOT|Read-only file system|EROFS", re.I), "io"),
    (re.compile(r"fork: retry|(fork|spawn|clone)\w*\W.{0,60}(Resource temporarily unavailable|EAGAIN|Errno 11\b)|"
                r"(Resource temporarily unavailable|EAGAIN|Errno 11\b).{0,60}\b(fork|spawn|clone)|pids\.max", re.I),
     "subprocess"),
    (re.compile(r"Connection refused|ECONNREFUSED|Errno 111\b|(HTTP|status|code)\W{0,3}5\d\d\b|\b5\d\d (Internal|Server|"
                r"Service|Bad Gateway|Gateway)|Service Unavailable|Bad Gateway|Gateway Time-?out|Internal Server Error",
                re.I), "network"),
    (re.compile(r"FileExists|EEXIST|\.lock\b|lock ?file|locked|database is locked|sqlite3?\.OperationalError|"
                r"Timeout\(?\s*$|BlockingIOError|EWOULDBLOCK", re.I), "locks"),
    (re.compile(r"connect|connection|refused|socket|https?|urlopen|requests\.|urllib|(?<!_)timed? ?out(?!\s*=[^=])|unreachable|"
                r"getaddrinfo|gaierror|dns|grpc|redis|ECONN|EHOSTUNREACH|ENETUNREACH|503|502|429", re.I), "network"),
    (re.compile(r"FileNotFound|No such file|ENOENT|os\.path\.(exists|isfile)|\.exists\(\)|EIO|ESTALE|"
                r"disk|storage", re.I), "io"),
    (re.compile(r"CalledProcessError|returncode|exit status", re.I), "subprocess"),
]

NAMED = 5   # the first rows of ERROR_WORDS: failures that name their resource

# a log line that reports a failure or a retry (the diagnosis's retry evidence and the report's
# "looks like an error" mark on the last lines written both read this one)
ERROR_LINE = re.compile(r"error|exception|traceback|refused|denied|timed? ?out|fail|retry|retrying|"
                        r"unavailable|locked|cannot|could not|unable|out of memory|no space left|"
                        r"quota exceeded|bad gateway|internal server|fatal|killed|unreachable", re.I)


def _words_of(category):
    """One pattern of every error word of a category (a failure that names its resource)."""
    return re.compile("|".join("(?:%s)" % pattern.pattern for pattern, found in ERROR_WORDS[:NAMED] if found == category),
                      re.I)


ERROR_WORDS_OF = {category: _words_of(category) for category in ("cuda", "io", "subprocess", "network")}


def retry_library(stack):
    """The retry helper a stack sleeps in, or None."""
    for frame in stack or []:
        for file_pattern, function, library in RETRY_FRAMES:
            if regex(file_pattern).search(canonical_file(frame[1])) and regex(function).search(frame[0] or ""):
                return library
    return None


def _first_category(texts, rows):
    for text in texts:
        for pattern, category in rows:
            if text and pattern.search(text):
                return category
    return None


def named_category(*texts):
    """The category of a failure that names its resource in any of texts (No space left on device,
    a fork refused, Connection refused), or None."""
    return _first_category(texts, ERROR_WORDS[:NAMED])


def category_of_text(*texts):
    return _first_category(texts, ERROR_WORDS)


def failure_category(*texts):
    """The category of the failure texts (except clauses, a loop's code, error lines) are about:
    one that names its resource in any of them first, for it outweighs what an except clause
    alone suggests (BlockingIOError is a lock taken with LOCK_NB, a non-blocking socket or a
    refused fork); else the first error word found."""
    return named_category(*texts) or category_of_text(*texts)
