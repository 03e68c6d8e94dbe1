"""Secrets never reach a report: a table of forms x names (a real target end to end is in
tests/live/test_redaction_end_to_end.py).

The rule (stalldiag/redact.py): a name is split into words; it is secret when a word is a
secret word (token, password, secret, auth, ...) or ends in one, or is `key` beside an owner
(api, access, private, ...), unless a word says the value is a quantity, a place or a name
(budget, max, len, file, path, name, ...). Values that look like credentials (URL passwords,
bearer tokens, known token prefixes) are masked whatever their name.
"""
import re
import signal

import pytest

from stalldiag import redact
from stalldiag.redact import MASK, redact_argv, redact_local, redact_text

# --- names ------------------------------------------------------------------------------------
# (words) rendered per form: --api-key, API_KEY, api_key
SECRET_NAMES = [("api", "key"), ("auth", "token"), ("db", "password"), ("password",), ("passwd",), ("secret",),
                ("client", "secret"), ("access", "token"), ("hf", "token"), ("aws", "secret", "access", "key"),
                ("openai", "api", "key"), ("private", "key"), ("credentials",), ("authorization",), ("apikey",),
                ("dbpassword",), ("session", "key"), ("cookie",)]
HARMLESS_NAMES = [("lr",), ("keyboard", "layout"), ("token", "budget"), ("max", "tokens"), ("tokenizer",),
                  ("author",), ("key",), ("sort", "key"), ("password", "file"), ("secret", "name"),
                  ("batch", "size"), ("monkey",)]

SECRET_VALUE = "s3cr3tValue9"
HARMLESS_VALUE = "plain0value"


def dashed(words):
    return "-".join(words)


def snake(words):
    return "_".join(words)


def upper(words):
    return snake(words).upper()


def camel(words):
    return words[0] + "".join(w.title() for w in words[1:])


# --- forms: (id, argv or text from (name words, value)) -----------------------------------------
ARGV_FORMS = {
    "--k v": lambda n, v: ["--" + dashed(n), v],
    "--k=v": lambda n, v: ["--" + dashed(n) + "=" + v],
    "--k_v=v": lambda n, v: ["--" + snake(n) + "=" + v],
    "-k v": lambda n, v: ["-" + dashed(n), v],
    "K=V": lambda n, v: [upper(n) + "=" + v],
    "k: v": lambda n, v: [dashed(n) + ": " + v],
    "json": lambda n, v: ['--config={"%s": "%s", "lr": 0.1}' % (snake(n), v)],
    "json camelCase": lambda n, v: ['{"%s":"%s"}' % (camel(n), v)],
    "yaml": lambda n, v: ["db:\n  %s: %s\n  host: x\n" % (snake(n), v)],
    "sh -c": lambda n, v: ["python3 train.py --%s %s --lr 0.1" % (dashed(n), v)],
    "sh -c quoted": lambda n, v: ["python3 train.py --%s '%s x' --lr 0.1" % (dashed(n), v)],
}
SOURCE_FORMS = {
    "assign": lambda n, v: '%s = "%s"' % (snake(n), v),
    "kwarg": lambda n, v: 'connect(host, %s="%s", retries=3)' % (snake(n), v),
    "dict": lambda n, v: "cfg = {'%s': '%s', 'lr': 0.1}" % (snake(n), v),
    "environ": lambda n, v: 'os.environ["%s"] = "%s"' % (upper(n), v),
    "annotated": lambda n, v: '%s: str = "%s"' % (snake(n), v),
    "yaml line": lambda n, v: "%s: %s" % (snake(n), v),
    "env line": lambda n, v: "export %s=%s" % (upper(n), v),
}


def cases(forms):
    out = []
    for form, make in forms.items():
        for words in SECRET_NAMES:
            out.append(pytest.param(make, words, True, id="%s|%s|secret" % (form, dashed(words))))
        for words in HARMLESS_NAMES:
            out.append(pytest.param(make, words, False, id="%s|%s|kept" % (form, dashed(words))))
    return out


@pytest.mark.parametrize("make, words, secret", cases(ARGV_FORMS))
def test_argv_forms(make, words, secret):
    value = SECRET_VALUE if secret else HARMLESS_VALUE
    argv = ["python3", "train.py"] + make(words, value)
    out = redact_argv(argv)
    if secret:
        assert value not in " ".join(out) and MASK in " ".join(out), out
        assert any(dashed(words) in a or upper(words) in a or snake(words) in a or camel(words) in a for a in out)
    else:
        assert out == argv


@pytest.mark.parametrize("make, words, secret", cases(SOURCE_FORMS))
def test_source_line_forms(make, words, secret):
    value = SECRET_VALUE if secret else HARMLESS_VALUE
    line = make(words, value)
    out = redact_text(line)
    if secret:
        assert value not in out and MASK in out, out
    else:
        assert out == line


@pytest.mark.parametrize("words", SECRET_NAMES, ids=dashed)
def test_a_local_with_a_secret_name_is_masked_whatever_its_value(words):
    assert redact_local(snake(words), "'harmless looking'") == MASK


@pytest.mark.parametrize("words", HARMLESS_NAMES, ids=dashed)
def test_a_local_with_a_harmless_name_keeps_its_value(words):
    assert redact_local(snake(words), "'%s'" % HARMLESS_VALUE) == "'%s'" % HARMLESS_VALUE
    assert redact_local(snake(words), "{'api_key': '%s', 'lr': 0.1}" % SECRET_VALUE) == \
        "{'api_key': '***', 'lr': 0.1}"


# --- values that are secret whatever their name ---------------------------------------------
TOKENS = {
    "url password": ("postgres://admin:%s@db.example:5432/x", "urlPassw0rd"),
    "url password https": ("https://user:%s@host/path", "httpsPassw0rd"),
    "Authorization: Bearer": ("Authorization: Bearer %s", "eyZbearer0123456789"),
    "bearer": ("bearer %s", "lowerBearer0123456"),
    "Basic": ("Authorization: Basic %s", "dXNlcjpwYXNz"),
    "ghp_": ("%s", "ghp_" + "a1B2" * 9),
    "github_pat_": ("%s", "github_pat_11ABCDEFG0" + "x" * 60),
    "hf_": ("%s", "hf_" + "Q" * 34),
    "sk-": ("%s", "sk-proj-" + "abc123" * 8),
    "xoxb-": ("%s", "xoxb-1234567890-abcdefghijkl"),
    "xoxp-": ("%s", "xoxp-1234567890-abcdefghijkl"),
    "AKIA": ("%s", "AKIAIOSFODNN7EXAMPLE"),
    "glpat-": ("%s", "glpat-" + "x1Y2z3" * 4),
    "AIza": ("%s", "AIza" + "SyA1b2C3d4" * 3 + "e5F6g"),
    "JWT": ("%s", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
}


@pytest.mark.parametrize("template, value", list(TOKENS.values()), ids=list(TOKENS))
@pytest.mark.parametrize("context", ["argv --k=v", "argv --k v", "source", "local", "free text"])
def test_credential_values_are_masked_under_any_name(template, value, context):
    text = template % value
    if context == "argv --k=v":
        out = " ".join(redact_argv(["train.py", "--note=" + text]))
    elif context == "argv --k v":
        out = " ".join(redact_argv(["train.py", "--note", text]))
    elif context == "source":
        out = redact_text('note = "%s"  # see %s' % (text, text))
    elif context == "local":
        out = redact_local("note", repr(text))
    else:
        out = redact_text("connecting with %s now" % text)
    assert value not in out and MASK in out, out


@pytest.mark.parametrize("text", [
    "https://host.example:8080/path?q=1", "ssh://git@github.com/org/repo", "Basic training loop",
    "the bearer of news", "hf_transfer", "sk-learn", "task-abcdefghijklmnopqrstuvwxyz", "eyJ",
    "gpt2-xl", "--lr=0.1", "--keyboard-layout=us", "--token-budget=10", "--max-tokens 512",
    "--tokenizer=bert-base-uncased", "--author=ada", "-p 8080", "-k 5",
])
def test_look_alikes_are_kept(text):
    assert redact_text(text) == text
    assert redact_argv(text.split(" ")) == text.split(" ")


def test_option_name_stays_and_a_following_option_is_not_eaten():
    assert redact_argv(["--hf-token", "abc", "--lr", "0.1"]) == ["--hf-token", MASK, "--lr", "0.1"]
    assert redact_argv(["--use-auth", "--verbose"]) == ["--use-auth", "--verbose"]


# --- linear time: a 100 KB argument once made a pattern backtrack for 276 s --------------------

ADVERSARIAL = ["a", "a=", "-", "--a ", "a: ", "eyJ-", "sk-", "ghp_", "https://", "://a:", '"a": "', "'", '"',
               "Basic ", "bearer ", "x" * 63 + "=", "a\\", "AKIA", "a:b=", '["a"]=', "--password ", "-a-", ".",
               "hf_", "token: x=", "Authorization: Bearer ", "a" * 70 + ": ", "eyJaaaaa.", "eyJaaaaa.aaaaa-"]


@pytest.fixture
def hang_guard():
    """Fail instead of hanging: a quadratic pattern takes minutes on these inputs, a linear one
    milliseconds (about 1 s for all of them), so the 30 s alarm is a guard, not a measurement."""
    def alarm(*_):
        raise AssertionError("redaction did not finish within 30 s: a regex backtracks")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_every_pattern_is_linear_on_100kb_inputs(hang_guard):
    patterns = [v for v in vars(redact).values() if isinstance(v, re.Pattern)]
    assert len(patterns) >= 5
    for unit in ADVERSARIAL:
        text = (unit * (100_000 // len(unit) + 1))[:100_000]
        for pattern in patterns:      # uncut: redact_text cuts arguments to 4 KB first
            pattern.sub("", text)
        redact_argv([text, "--password", text])
        redact_local("note", text)
