"""Stack reads that race their target: py-spy's non-blocking reads of a deep stack that moves fast
(inductor lowering) fail or come back cut short.  The probe keeps such samples without frames, and
the diagnosis judges a thread on the samples that have frames."""
import copy

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.probes.stacks import READ_ERRORS, _drop_torn, _rooted
from stalldiag.report import build_report

FRAMES = [["<module>", "/job/train.py", 30], ["main", "/job/train.py", 20],
          ["_bootstrap", "/usr/lib/python3.11/threading.py", 995], ["lower", "/site/torch/_inductor/graph.py", 900],
          ["_run_module_as_main", "/usr/lib/python3.11/runpy.py", 198]]


def test_a_stack_is_whole_when_its_outermost_frame_is_a_threads_root():
    assert _rooted([1, 0], FRAMES)            # main thread: <module> outermost (stacks are leaf first)
    assert _rooted([3, 2], FRAMES)            # a threading.Thread
    assert _rooted([0, 4], FRAMES)            # python -m: runpy outermost
    assert not _rooted([3, 1], FRAMES)        # cut short: ends at main()
    assert not _rooted([], FRAMES)
    assert not _rooted([99], FRAMES)          # an index a damaged profile holds


def test_torn_samples_lose_their_frames_only_where_the_thread_has_whole_ones_and_reads_raced():
    profiles = {(7, 7): {"stacks": [[3, 1, 0], [3], [3, 1, 0], [1]]},   # two whole, two torn
                (7, 8): {"stacks": [[3], [3]]},                          # no whole one: left alone
                (9, 9): {"stacks": [[3, 1, 0], [3]]}}                    # its reads did not race
    _drop_torn(profiles, FRAMES, racing={7})
    assert profiles[(7, 7)]["stacks"] == [[3, 1, 0], [], [3, 1, 0], []]
    assert profiles[(7, 8)]["stacks"] == [[3], [3]]
    assert profiles[(9, 9)]["stacks"] == [[3, 1, 0], [3]]


def test_py_spys_words_for_a_raced_read_are_recognised_and_a_clean_summary_is_not():
    for line in ("Error: Failed to get stack traces", "Failed to copy PyFrameObject", "Bad address (os error 14)",
                 "Failed to find a python interpreter in the .data section",
                 "py-spy> Wrote speedscope file to '/tmp/s.json'. Samples: 4 Errors: 12"):
        assert READ_ERRORS.search("py-spy> Sampling\n%s\n" % line), line
    assert not READ_ERRORS.search("py-spy> Wrote speedscope file to '/tmp/s.json'. Samples: 4 Errors: 0\n")
    assert not READ_ERRORS.search("Permission denied (os error 13)")


def test_a_compile_seen_whole_once_among_frameless_samples_is_a_compile_not_a_spin():
    """The CI miss of inductor_diff_compile_hang: one whole stack (in inductor) and three a racing
    read left without frames.  Judged on all four samples, compile was 25% of them and the thread
    'busy computing'; judged on the one with frames, it compiles, and one sample is thin evidence."""
    raw = copy.deepcopy(load_report(str(CAPTURES / "repro_inductor_diff_compile_hang.json")))
    main = next(t for p in raw["processes"] for t in p["threads"] if t.get("stack_samples"))
    raw["stacks"].append([])
    main["stack_samples"] = [[main["stack_samples"][-1][0], 1], [len(raw["stacks"]) - 1, 3]]
    verdict = build_report(raw)["verdict"]
    assert verdict["category"] == "compilation", verdict["summary"]
    assert "spins" not in verdict["summary"] and verdict["progress"]["state"] != "making progress"
    assert verdict["confidence"] != "high", verdict.get("confidence_rests_on")


def test_the_users_line_is_a_files_line_before_code_made_at_run_time():
    """spin_on_queue_empty on 3.10 (a CI miss): `while q.empty(): pass` caught inside a namedtuple's
    generated code under selectors.py was said to spin 'at <lambda> (<string>:1)'."""
    from stalldiag.diagnosis.threads import user_frame_of
    lib = "/root/.pyenv/versions/3.10.13/lib/python3.10/"
    stack = [["<lambda>", "<string>", 1], ["register", lib + "selectors.py", 352],
             ["wait", lib + "multiprocessing/connection.py", 930], ["main", "/job/spin_on_queue_empty.py", 21],
             ["<module>", "/job/spin_on_queue_empty.py", 26]]
    assert user_frame_of(stack)[:3] == ["main", "/job/spin_on_queue_empty.py", 21]
    # `python -c`: the user's code is all "<string>"
    assert user_frame_of([["f", "<string>", 3], ["<module>", "<string>", 5]])[:3] == ["f", "<string>", 3]
    assert user_frame_of([["register", lib + "selectors.py", 352]])[0] == "register"
    assert user_frame_of([]) is None
