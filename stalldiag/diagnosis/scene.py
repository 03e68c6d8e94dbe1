"""The scene every detector reads: the graph (the capture's facts, built once), the walk from the
focus to the root, and, for the rows that need it, the progress record.  Detectors read it and
return Findings; nothing in it changes once made."""
from dataclasses import field, replace
from typing import Any, Dict

from ..records import typed_record


@typed_record(frozen=True)
class Scene:
    g: Any                        # graph.WaitGraph
    walk: Any                     # walk.Walk
    progress: Any = None          # progress.Progress, for the rows of the "progress" stage
    _memo: Dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def focus(self):
        """The thread that should make progress (the training loop)."""
        return self.walk.chain[0]

    @property
    def root(self):
        """The end of the wait-for chain: the culprit."""
        return self.walk.root

    @property
    def chain(self):
        return self.walk.chain

    def once(self, detector):
        """detector(self) as a list, run once however many rows read it."""
        if detector not in self._memo:
            found = detector(self)
            self._memo[detector] = list(found) if isinstance(found, (list, tuple)) else [] if found is None else [found]
        return self._memo[detector]

    def with_progress(self, progress):
        return replace(self, progress=progress)
