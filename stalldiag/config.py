"""One Config for an inspection: what the user asked, from the command line to the session,
the Slurm fan-out and `watch`.  Read once, passed whole; nothing below the CLI re-reads options."""
from dataclasses import replace
from typing import List, Optional

from .records import typed_record


@typed_record(frozen=True)
class Config:
    pid: Optional[int] = None
    children: bool = False
    duration: float = 10.0          # the sampling window, s (0: one snapshot)
    rate: float = 5.0               # /proc samples per second of every thread
    stack_rate: float = 3.0         # py-spy samples per second per process
    native: bool = False            # py-spy --native: pauses the target at each sample
    native_dumps: int = 0           # native snapshots of the busiest processes at the window's end
    syscalls: str = "sampled"       # or "exact": every syscall counted (bpftrace, perf, strace)
    syscall_backend: Optional[str] = None
    locals: bool = False            # record local variables of the innermost frames
    host_label: Optional[str] = None  # the host's name in the report (`stalldiag merge`)
    discovered: Optional[str] = None  # why discovery chose the target, when no PID was given

    def __post_init__(self):
        # the probes' floors, whatever asked: a window is never negative, a rate never under 0.5/s
        object.__setattr__(self, "duration", max(0.0, float(self.duration)))
        object.__setattr__(self, "rate", max(0.5, float(self.rate)))
        object.__setattr__(self, "stack_rate", max(0.5, float(self.stack_rate)))

    def but(self, **changes):
        """A copy with some fields changed: config.but(pid=123, children=True)."""
        return replace(self, **changes)

    def inspect_args(self) -> List[str]:
        """The `stalldiag inspect` options that give this config again (for srun on each node)."""
        return (["--duration", "%g" % self.duration, "--rate", "%g" % self.rate, "--stack-rate", "%g" % self.stack_rate,
                 "--syscalls", self.syscalls, "--native-dumps", str(self.native_dumps)]
                + (["--native"] if self.native else [])
                + (["--locals"] if self.locals else []))
