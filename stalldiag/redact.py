"""Keep secrets out of reports: redact command lines, pick only named env vars."""
import re

from .knowledge.flight_recorder import ENV_VARS as FLIGHT_RECORDER_VARS
from .knowledge.knobs import NAMES as KNOB_NAMES

MASK = "***"

# Environment variables a report may carry: the rest may hold secrets.
ENV_ALLOWED = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
    "MASTER_ADDR", "MASTER_PORT", "PYTHONUNBUFFERED", "CUDA_VISIBLE_DEVICES",
    "TORCHELASTIC_RUN_ID",
    # ranks under MPI and Slurm
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
) + tuple(name for name in KNOB_NAMES if name not in ("PYTHONUNBUFFERED", "CUDA_VISIBLE_DEVICES")) \
    + tuple(name for name in FLIGHT_RECORDER_VARS if name not in KNOB_NAMES)
# (the knobs that change how PyTorch, CUDA, NCCL, OpenMP and Python run: knowledge/knobs.py; where
# the Flight Recorder's dumps and dump-on-demand FIFOs are: knowledge/flight_recorder.py)


# --- which names are secret -----------------------------------------------------------------
#
# A name (`--db-password`, `HF_TOKEN`, `apiKey`, "client_secret") is split into words at
# - _ . and camelCase.  It is secret when a word is a secret word or ends in one
# (`dbpassword`, `authtoken`), or is `key` beside a word saying whose key it is
# (`api-key`, `AWS_SECRET_ACCESS_KEY`, `private_key`); unless another word says the value is
# a quantity, a place or a name rather than the secret itself (`--token-budget=10`,
# `--max-tokens`, `--password-file=/run/x`, `--secret-name=prod`).  A bare `key` (a sort key,
# a dict key), single letters (`-p` is a port as often as a password) and words that only
# contain a secret word (`tokenizer`, `author`, `keyboard`) are kept.  Values are masked
# whatever their name when they look like a credential: a URL's password, a bearer token,
# a known token prefix.

SECRET_WORDS = frozenset((
    "token", "secret", "secrets", "password", "passwords", "passwd", "passphrase", "pwd", "pass", "auth",
    "authorization", "oauth", "credential", "credentials", "creds", "cookie", "apikey", "sessionid", "jwt",
    "signature",   # X-Amz-Signature=..., a presigned URL's key to the object
))
SECRET_SUFFIXES = ("password", "passwd", "secret", "token", "apikey", "accesskey", "secretkey", "privatekey")
KEY_OWNERS = frozenset((
    "api", "access", "secret", "private", "priv", "signing", "master", "encryption", "client", "ssh", "aws",
    "license", "account", "service", "app", "hmac", "session", "deploy", "openai", "anthropic", "wandb", "hf",
    "stripe", "gpg", "pgp", "auth",
))
NOT_THE_SECRET = frozenset((
    "budget", "count", "counts", "num", "number", "max", "min", "limit", "limits", "len", "length", "size",
    "per", "rate", "timeout", "ttl", "expiry", "expires", "expiration", "retries", "file", "path", "dir",
    "url", "uri", "endpoint", "host", "port", "name", "env", "var", "type", "kind", "method", "mode",
    "format", "version", "scope", "scopes", "provider", "enabled", "required",
))
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_words(name):
    """'--dbPassword' -> ['db', 'password']; 'AWS_SECRET_ACCESS_KEY' -> ['aws', 'secret', 'access', 'key']."""
    return [w.lower() for w in _WORDS.findall(name[:128])]


def _looks_secret(name):
    words = name_words(name)
    if not words or any(w in NOT_THE_SECRET for w in words):
        return False
    for w in words:
        if w in SECRET_WORDS or w.endswith(SECRET_SUFFIXES):
            return True
    return "key" in words and any(w in KEY_OWNERS for w in words)



# --- secret values inside a string ------------------------------------------------------------
#
# Every pattern is linear in the length of the text: repeats are bounded or cannot
# overlap, and each match starts at a boundary (a 100 KB argument once made an
# unbounded pattern backtrack for 276 s; tests/unit/test_redaction.py keeps it fixed).

_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<user>[^/@:\s]{0,256}):(?P<pw>[^/@\s]{0,1024})@")
# "Bearer <token>" in any case; "Basic <base64>" only when it cannot be a word: a digit, + / =
# or a capital after a small letter in it ("Basic dXNlcjpwYXNz", not "Basic training")
_BEARER = re.compile(r"\b(?i:(bearer))[ \t]+[A-Za-z0-9._~+/=-]{8,}"
                     r"|\b(Basic)[ \t]+(?=\S*(?:[0-9+/=]|[a-z][A-Z]))[A-Za-z0-9+/]{8,}={0,2}")
# a token starts where no token character precedes it, so a long run is tried once, not at every offset
_KNOWN_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_-])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|xox[abeoprs]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|npm_[A-Za-z0-9]{36}"
    r"|pypi-[A-Za-z0-9_-]{50,}|eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)")

# a PEM private key on one line (a log line, a repr): masked from its header to the end of the line
PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PRIVATE_KEY = re.compile(PRIVATE_KEY_BEGIN.pattern + r"[^\n]*")

# ?name=value&... in a URL (a logged request): each parameter by its name, the value up to the next &
# (the assignment pattern below would take "https" as a name and skip the whole URL)
_QUERY_PARAM = re.compile(r"(?<=[?&;])(?P<name>[A-Za-z_][\w.-]{0,63})=(?P<bare>[^&;#\s\"'<>]{1,4096})")

_SCHEME = r"(?i:bearer|basic|token)[ \t]+"
# name = value, name: value, --name=value, "name": "value", os.environ["NAME"] = "value",
# name: str = "value"; a quoted value is masked up to its closing quote (or the end of the line),
# "Authorization: Bearer x" keeps its scheme word.
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(?P<name>-{0,2}[A-Za-z_][\w.-]{0,63})["']?\]?"""
    r"""(?:[ \t]{0,8}:[ \t]{0,8}[A-Za-z_][\w.]{0,40})?[ \t]{0,8}[:=][ \t]{0,8}"""
    r"""(?:"(?:%(s)s)?(?P<dq>(?:[^"\\\n]|\\.){0,4096})"?"""
    r"""|'(?:%(s)s)?(?P<sq>(?:[^'\\\n]|\\.){0,4096})'?"""
    r"""|(?:%(s)s)?(?P<bare>[^\s"',;)}\]]+))""" % {"s": _SCHEME})
# --name value, -name value inside one string (a shell command passed as one argument)
_OPTION_VALUE = re.compile(
    r"""(?<![\w.-])(?P<name>--?[A-Za-z_][\w.-]{1,63})[ \t]{1,8}"""
    r"""(?:"(?P<dq>[^"\n]{0,4096})"?|'(?P<sq>[^'\n]{0,4096})'?|(?P<bare>[^\s"'-]\S*))""")
MAX_ARG = 4096


def _mask_value(m):
    """The match with its value (bare or inside quotes) replaced by MASK, when the name is secret."""
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    if m.group(group) in (MASK, "") or not _looks_secret(m.group("name")):
        return m.group(0)
    text, start = m.group(0), m.start()
    return text[:m.start(group) - start] + MASK + text[m.end(group) - start:]


def redact_text(text):
    """Redact secrets that are recognisable inside one string (an argument, a source line)."""
    if len(text) > MAX_ARG:
        text = text[:MAX_ARG] + "...[%d chars cut]" % (len(text) - MAX_ARG)
    text = _URL_CREDENTIALS.sub(lambda m: "%s%s:%s@" % (m.group("scheme"), m.group("user"), MASK), text)
    text = _BEARER.sub(lambda m: "%s %s" % (m.group(1) or m.group(2), MASK), text)
    text = _KNOWN_TOKEN.sub(MASK, text)
    text = _PRIVATE_KEY.sub(lambda m: m.group(0)[:m.group(0).index("KEY-----") + 8] + MASK, text)
    text = _QUERY_PARAM.sub(lambda m: "%s=%s" % (m.group("name"), MASK) if _looks_secret(m.group("name"))
                            else m.group(0), text)
    text = _ASSIGNMENT.sub(_mask_value, text)
    return _OPTION_VALUE.sub(_mask_value, text)


def redact_local(name, text):
    """A local variable's repr: masked whole when its name looks secret, else like any text."""
    return MASK if _looks_secret(name) else redact_text(text)


MAX_ARGS = 256


def redact_argv(argv):
    """A copy of argv with secret values masked.

    Handles `--token X`, `-token X`, `--token=X`, `KEY=VALUE`, `name: value`, JSON and YAML
    text, URLs with user:password, bearer tokens and known token prefixes.  The option name
    stays so a reader knows what was there.
    """
    out = []
    hide_next = False
    if len(argv) > MAX_ARGS:
        argv = list(argv[:MAX_ARGS]) + ["...[%d more arguments]" % (len(argv) - MAX_ARGS)]
    for arg in argv:
        if hide_next and not re.match(r"--[A-Za-z]", arg):   # `--auth --verbose`: the next is an option
            out.append(MASK)
            hide_next = False
            continue
        hide_next = False
        if arg.startswith("-") and "=" not in arg and _looks_secret(arg):
            hide_next = True
            out.append(arg)
            continue
        out.append(redact_text(arg))
    return out
