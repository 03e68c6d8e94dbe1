"""Errors the command line turns into one line and an exit code.

Exit codes (documented in the README):
  0  report written
  1  unexpected internal error (a bug: please report it)
  2  bad usage (click's own code)
  3  no such process, or it exited before sampling began
  4  target refused: a zombie, a kernel thread, stalldiag itself
  5  permission denied for the target
  6  capture/report file unreadable, corrupt or of a newer schema
  7  output path not writable
  8  no PID given and several runs could be the one (candidates listed)
  9  diagnosis or a renderer failed (a bug): the capture is still saved in a JSON report
  130 / 143  interrupted by SIGINT / SIGTERM (report of what was sampled still written)
"""

EXIT_CODES = {
    "internal": 1,
    "usage": 2,
    "no-such-process": 3,
    "bad-target": 4,
    "permission": 5,
    "bad-capture": 6,
    "output": 7,
    "ambiguous": 8,
    "partial": 9,
}


class StalldiagError(Exception):
    """An error with a one-line message and an exit code."""

    def __init__(self, message, code="internal"):
        super().__init__(message)
        self.code = code

    @property
    def exit_code(self):
        return EXIT_CODES.get(self.code, 1)


class ProcessError(StalldiagError):
    """An error about one process, which it carries as attributes (psutil's model): pid, and
    name, tid and the /proc file read where known.  The message is the one line the CLI prints."""

    code = "internal"
    what = "error"       # the message's words when none is given: "<file or pid>: <what>"

    def __init__(self, pid, msg=None, name=None, tid=None, path=None):
        self.pid, self.name, self.tid, self.path = pid, name, tid, path
        super().__init__(msg or self._message(), code=type(self).code)

    def _what(self):
        return "pid %s%s%s" % (self.pid, "" if self.tid is None else " tid %s" % self.tid,
                               "" if self.name is None else " (%s)" % self.name)

    def _message(self):
        return "%s: %s" % (self.path or self._what(), self.what)


class NoSuchProcess(ProcessError):
    """The process (or thread) does not exist, or exited: before sampling began or mid-window."""
    code = "no-such-process"
    what = "no such process"


class AccessDenied(ProcessError):
    """The kernel refused a read of the process (ptrace access mode, another user, Yama)."""
    code = "permission"
    what = "permission denied"


class BadTarget(ProcessError):
    """A process stalldiag will not inspect: a zombie, a kernel thread, stalldiag itself."""
    code = "bad-target"
    what = "not a target"


def last_line(text, limit=None, skip=()):
    """The last non-blank line of a helper's output (py-spy, a syscall tracer, srun), stripped and
    cut to limit characters: the one that says what went wrong; "" when there is none.  Lines
    starting with one of `skip` are passed over."""
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if line and not line.startswith(tuple(skip)):
            return line[:limit] if limit else line
    return ""


class CaptureError(StalldiagError):
    def __init__(self, message):
        super().__init__(message, code="bad-capture")


class OutputError(StalldiagError):
    def __init__(self, message):
        super().__init__(message, code="output")
