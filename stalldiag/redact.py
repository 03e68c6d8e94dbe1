"""Keep secrets out of reports: redact command lines, pick only named env vars."""
import re

SECRET_WORDS = (
    "token", "secret", "password", "passwd", "api_key", "apikey", "api-key", "auth",
    "credential", "private_key", "private-key", "access_key", "access-key", "session",
)
MASK = "***"

# Environment variables a report may carry: the rest may hold secrets.
ENV_ALLOWED = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
    "MASTER_ADDR", "MASTER_PORT", "PYTHONUNBUFFERED", "CUDA_VISIBLE_DEVICES",
    "TORCHELASTIC_RUN_ID",
    # ranks under MPI and Slurm
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
)

# Where each launcher puts a process's rank, local rank and world size.
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")
WORLD_SIZE_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def first_var(env, names):
    """The first of names set to a number in env, as an int, or None."""
    for name in names:
        value = (env or {}).get(name, "")
        if value.isdigit():
            return int(value)
    return None

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/@:\s]*):(?P<pw>[^/@\s]*)@")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_KNOWN_TOKEN = re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b")


def _looks_secret(name):
    name = name.lower().lstrip("-")
    return any(word in name for word in SECRET_WORDS)


# name = value, name: value, --name=value, "name": "value" inside a longer string
# (names start at a word boundary and are at most 64 characters, so a 100 KB
# argument is scanned in linear time)
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(?P<name>[A-Za-z_][\w.-]{0,63})(?P<q1>["']?)(?P<sep>[ \t]{0,8}[:=][ \t]{0,8})"""
    r"""(?P<q2>["']?)(?P<value>[^\s"',;)}]+)""")
MAX_ARG = 4096


def redact_text(text):
    """Redact secrets that are recognisable inside one string (an argument, a source line)."""
    if len(text) > MAX_ARG:
        text = text[:MAX_ARG] + "...[%d chars cut]" % (len(text) - MAX_ARG)
    text = _URL_CREDENTIALS.sub(lambda m: "%s%s:%s@" % (m.group("scheme"), m.group("user"), MASK), text)
    text = _BEARER.sub(lambda m: "%s %s" % (m.group(1), MASK), text)
    text = _KNOWN_TOKEN.sub(MASK, text)

    def mask(m):
        if not _looks_secret(m.group("name")) or m.group("value") == MASK:
            return m.group(0)
        return m.group("name") + m.group("q1") + m.group("sep") + m.group("q2") + MASK
    return _ASSIGNMENT.sub(mask, text)


MAX_ARGS = 256


def redact_argv(argv):
    """A copy of argv with secret values masked.

    Handles `--token X`, `--token=X`, `KEY=VALUE`, URLs with user:password and
    bearer tokens.  The option name stays so a reader knows what was there.
    """
    out = []
    hide_next = False
    if len(argv) > MAX_ARGS:
        argv = list(argv[:MAX_ARGS]) + ["...[%d more arguments]" % (len(argv) - MAX_ARGS)]
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and "=" not in arg and _looks_secret(arg):
            hide_next = True
            out.append(arg)
            continue
        out.append(redact_text(arg))
    return out
