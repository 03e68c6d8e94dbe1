"""One probe interface: every source of evidence is a Probe that the session runs over the window.

    probe.start(ctx)            before the window's first tick
    probe.tick(ctx)             at every turn of the window's loop (ctx.t: the /proc sample this
                                turn took, or None); probe.due: when it wants the next turn
    probe.watched(ctx, record)  a process joined the window (a child born, a lock holder outside
                                the tree): ctx.watch(pid, role_hint) is how a probe adds one
    probe.stop(ctx) -> Section  after the window, in the list's order; ctx.sections holds the
                                Sections of the probes stopped before it

A Section is a typed record of what one probe saw: section.write(capture) puts it in the capture
dict (capture.build), and section.limitations says what it could not see, in the words the
report prints.  A probe that raises is not asked again during the window (its stop() still runs,
to end what it started); it degrades to its failed() Section (its part of the capture as "not
measured", and a limitation naming the error) and the others report as before.
"""
import time
from dataclasses import field, fields
from typing import List

from ..records import typed_record
from .. import targets


@typed_record
class Section:
    """What one probe saw, and how it goes into the capture: each field but the limitations is
    the capture key of its name, unless write() says otherwise."""
    limitations: List[str] = field(default_factory=list)

    def write(self, capture):
        """Put this section's part in the capture dict (its keys; the limitations are added by
        capture.build)."""
        for item in fields(self):
            if item.name != "limitations":
                capture[item.name] = getattr(self, item.name)


class Probe:
    """One source of evidence over the window (see the module's docstring)."""

    name = "probe"
    Section = Section
    # False: it samples over the window (the window ends once these have stopped); True: it
    # resolves, once the window ended, what the samplers saw (lock holders, wakers, the GIL)
    at_end = False
    due = None   # seconds into the window at which it wants the loop's next turn (None: no wish)

    def start(self, ctx):
        pass

    def tick(self, ctx):
        pass

    def watched(self, ctx, record):
        pass

    def stop(self, ctx):
        return self.Section()

    def failed(self, error):
        """The Section of a probe that raised `error` (a one-line text): nothing of it measured."""
        return self.Section(limitations=["%s: not measured (the probe failed: %s)" % (self.name, error)])


class StackWaitProbe(Probe):
    """A probe that resolves, once the window ended, waits the Python stacks show (a file polled, the
    GIL, a Thread.join): resolve(live records, py-spy's profiles, frames) gives its one capture
    key, None when no thread shows such a wait."""

    at_end = True

    @staticmethod
    def resolve(records, profiles, frames):
        raise NotImplementedError

    def stop(self, ctx):
        stacks = ctx.sections.get("stacks")
        live = [r for r in ctx.sampler.records.values() if r.exited_at is None]
        return self.Section([], self.resolve(live, stacks.profiles if stacks else {}, stacks.frames if stacks else []))


class Context:
    """What the probes share over one window: the Config, the window's clock, the thread sampler
    (probes/threads.py: the record of every process watched, which every probe reads), and the
    Sections of the probes stopped so far."""

    def __init__(self, config, sampler, notice=None, provisional=None):
        self.config = config
        self.sampler = sampler
        self.notice = notice or (lambda message: None)
        # the session's provisional walk of the window so far (a probe never runs the diagnosis
        # itself): ctx -> (pids on the chain or None, whether a closed mechanism settles it)
        self._provisional = provisional
        self.t = None                 # the /proc sample taken at this turn of the loop, if any
        self.thread_count = 0         # threads of the live processes at the last sample
        self.skipped_children = 0     # without --children: the target's children not inspected
        self.sections = {}            # probe name -> Section, as they stop
        self.probes = []

    @property
    def t0(self):
        return self.sampler.t0

    @property
    def wall_start(self):
        return self.sampler.wall_start

    def restart(self):
        """Start the window now (once exact counting runs, so both cover the same span)."""
        self.sampler.t0 = time.monotonic()
        self.sampler.wall_start = time.time()

    def now(self):
        return time.monotonic() - self.sampler.t0

    def provisional_chain(self):
        """(pids on a provisional verdict's chain, or None; whether a closed mechanism already
        settles it), made once per window by the function the session gave (None: not made)."""
        if not hasattr(self, "_chain"):
            self._chain = (None, False) if self._provisional is None else self._provisional(self)
        return self._chain

    def watch(self, pid, role_hint):
        """Sample one more process (a lock holder, a waker outside the tree): its record, or None
        when it is gone or already watched."""
        key = targets.process_key(pid)
        if key is None or key in self.sampler.records:
            return None
        record = self.sampler.watch(key, role_hint=role_hint)
        self.joined(record)
        return record

    def joined(self, record):
        """Tell every probe that a process joined the window."""
        for probe in self.probes:
            run_guarded(probe, "watched", self, record)


def run_guarded(probe, phase, ctx, *args):
    """probe.<phase>(ctx, *args); an exception turns the probe off (probe._failed) instead of
    ending the inspection.  Returns what the call returned, None if it raised or was off."""
    if getattr(probe, "_failed", None) is not None:
        return None
    try:
        return getattr(probe, phase)(ctx, *args)
    except Exception as exc:   # a probe never stops the others: the report says what is missing
        probe._failed = "%s in %s(): %s" % (type(exc).__name__, phase, exc)
        return None
