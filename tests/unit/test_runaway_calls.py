"""A thread whose every stack sample sits at one line of a `for` loop's body is a runaway only when
that line makes a call that can run without bound (a regular expression backtracking, a native spin
lock): otherwise the loop's own work, repeated (`h.update(...)` per row), samples the same, and the
verdict must not say it spins (knowledge/frames.RUNAWAY_CALL, diagnosis/motion.repeated_call)."""
import pytest

from stalldiag.knowledge.frames import RUNAWAY_CALL


@pytest.mark.parametrize("line", [
    "if CMP3.search(text):",
    "if self.re_all_punctuation.fullmatch(para):",
    "for match in self._lang_vars.period_context_re().finditer(text):",
    'self.text = re.sub(NUMBERED_REFERENCE_REGEX, r"x", self.text)',
    "libc.pthread_spin_lock(ctypes.byref(self._word))",
])
def test_calls_that_can_run_away(line):
    assert RUNAWAY_CALL.search(line), line


@pytest.mark.parametrize("line", [
    'h.update(b"%d:%d" % (job_id, row))',
    "total += model(batch).sum().item()",
    "out.append(tokenizer.encode(text))",
])
def test_calls_a_loop_repeats_as_its_work(line):
    assert not RUNAWAY_CALL.search(line), line
