"""Secrets never reach a report, end to end: a real target holding them in its argv, environment,
source lines and locals, inspected into every report format.  The rule itself, form by form, is
tested in tests/unit/test_redaction.py.
"""
import json
import os

from helpers import inspect_json, run_stalldiag
from stalldiag.redact import MASK

# --- end to end: a real target, every report format --------------------------------------------

# (form, arguments, the secret among them)
ARGV_SECRETS = [
    ("--k v", ["--hf-token", "hfSpaceValue0000"], "hfSpaceValue0000"),
    ("--k=v", ["--api-key=argvApiKey0001"], "argvApiKey0001"),
    ("--k=v", ["--auth-token=argvAuthToken0002"], "argvAuthToken0002"),
    ("--k_v=v", ["--db_password=argvDbPass0003"], "argvDbPass0003"),
    ("-k v", ["-password", "argvDashPass0004"], "argvDashPass0004"),
    ("K=V", ["AWS_SECRET_ACCESS_KEY=argvAwsSecret0005"], "argvAwsSecret0005"),
    ("header", ["--header=Authorization: Bearer argvBearer0006xyz"], "argvBearer0006xyz"),
    ("json", ['--config={"api_key": "argvJsonKey0007", "lr": 0.1}'], "argvJsonKey0007"),
    ("yaml", ["db:\n  password: argvYaml0008\n"], "argvYaml0008"),
    ("url", ["--db=postgres://admin:argvUrlPass0009@db/x"], "argvUrlPass0009"),
    ("ghp_", ["--gh=ghp_argvGH0010abcdefghijklmnopqrstuvwx"], "argvGH0010"),
    ("github_pat_", ["--pat=github_pat_argvPAT0011abcdefghijklmnop"], "argvPAT0011"),
    ("hf_", ["--h=hf_argvHF0012abcdefghijklmnopqrs"], "argvHF0012"),
    ("sk-", ["--oa=sk-argvOpenAI0013abcdefghijklmnop"], "argvOpenAI0013"),
    ("xoxb-", ["--slack=xoxb-argvSlack0014-abcdef"], "argvSlack0014"),
    ("AKIA", ["--aws=AKIAIOSFODNN7EXAMPLE"], "AKIAIOSFODNN7EXAMPLE"),
    ("glpat-", ["--gl=glpat-argvGitLab0015abcdefgh"], "argvGitLab0015"),
    ("AIza", ["--g=AIzaSyArgvGoogle0016abcdefghijklmnopqrs"], "argvGoogle0016"),
    ("JWT", ["--jwt=eyJhbGciOiJIUzI1NiJ9.eyJhcmd2Snd0MDAxNSI6MX0.argvJwtSig0017"], "argvJwtSig0017"),
    ("sh -c", ["python3 inner.py --password argvInner0018 --lr 0.1"], "argvInner0018"),
]
HARMLESS_ARGS = ["--lr=0.1", "--keyboard-layout=us", "--token-budget=10", "--tokenizer=gpt2-small"]
# held by fixtures/workloads/secret_holder.py in its source lines and locals
FIXTURE_SECRETS = ["sk-abcdefghijklmnopqrstuvwxyz0123456789", "correct-horse-battery-staple-4242",
                   "tok_live_9f8e7d6c5b4a39281706", "ghp_LOCALnoteGHtoken0123456789abcdef", "localBearerT0ken77",
                   "jsonLineSecret55", "srcUrlPassw0rd"]
ENV_SECRETS = {"HF_TOKEN": "envHfToken0019", "AWS_ACCESS_KEY_ID": "AKIAENVEXAMPLE000020",
               "MY_DB_PASSWORD": "envsecretvalue12345"}


def test_no_secret_reaches_any_output(launch, tmp_path):
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", **ENV_SECRETS)
    argv = [a for _form, args, _secret in ARGV_SECRETS for a in args] + HARMLESS_ARGS
    w = launch("secret_holder.py", *argv, env=env)
    outs = [tmp_path / n for n in ("r.json", "r.md", "r.html", "r.txt", "r.speedscope.json")]
    args = []
    for out in outs:
        args += ["-o", out]
    proc = run_stalldiag("inspect", w.pid, "--duration", 2, "--locals", *args)
    assert proc.returncode == 0, proc.stderr
    texts = {out.name: out.read_text() for out in outs}
    texts["stdout"] = proc.stdout
    texts["stderr"] = proc.stderr
    report = json.loads(texts["r.json"])
    texts["r.json unescaped"] = json.dumps(report, ensure_ascii=False)
    secrets = [secret for _form, _args, secret in ARGV_SECRETS] + FIXTURE_SECRETS + list(ENV_SECRETS.values())
    leaks = [(secret, name) for secret in secrets for name, text in texts.items() if secret in text]
    assert not leaks, leaks

    cmdline = report["processes"][0]["cmdline"]
    for harmless in HARMLESS_ARGS:
        assert harmless in cmdline                       # kept as they were
    assert "--hf-token" in cmdline and "-password" in cmdline   # the option stays, its value does not
    assert set(report["processes"][0]["env"]) <= {"RANK", "WORLD_SIZE", "PYTHONUNBUFFERED"}
    frames = report["capture"]["frames"]
    codes = [f[3]["code"] for f in frames if len(f) > 3 and f[3]] + \
        [w["code"] for f in frames if len(f) > 3 and f[3] for w in f[3]["within"]]
    assert any("postgres://admin:***@db.example/x" in c for c in codes), codes   # the sampled line, redacted
    assert any('"db_password": "***"' in c for c in codes), codes
    local_values = {}
    for p in report["capture"]["processes"]:
        for t in p["threads"]:
            for entry in t.get("locals") or []:
                local_values.update(entry["locals"])
    assert local_values, "--locals recorded nothing"
    assert local_values["session_token"] == MASK and local_values["password"] == MASK
    assert local_values["token_budget"] == "10" and local_values["lr"] == "0.1"
    assert "us-intl" in local_values["keyboard_layout"]


def test_locals_are_off_by_default(launch):
    w = launch("secret_holder.py")
    report = inspect_json(w.pid, duration=1)
    assert not any(t.get("locals") for p in report["capture"]["processes"] for t in p["threads"])
