"""Nothing raw at rest outside the quarantine: canary values through the real stack with the shipped config.

The embedded default (``infra/sluice.yaml``: NER on) runs broker, tiny model, proxy, two stage workers and
the sink (this package's stack, before any fault is injected into it). Agents send canaries of every class
the redaction promises to hold — an AWS key id in a config line, a secret as a ``{"field": …, "value": …}``
pair in tool-call arguments, a brand-less Luhn-valid card in free text and under ``credit_card``, a
US-shaped phone number with an unassigned area code, person names of several locales in tool results and
free text, a key-shaped token after "token" — through explicit-id and history-linked trajectories, plus the
demo's own traffic. Then every place the stack writes outside the raw and dead-letter topics is scanned:
DuckDB, the redacted, audited and train topics, the stage tables' changelog topics, the stage workers'
RocksDB directories, the proxy spool and its linking state (which must hold hashes, never raw token ids),
and the logs. None may hold a canary.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import openai
import pytest

from governance.redaction.recognizers.passport_recognizer import check_digit
from pipeline.demo.personas import PERSONAS, canaries
from pipeline.stages.names import changelog_topics, ticks_topic
from sluice.events import scoped_trajectory_id
from tests.kafka_helpers import read_whole_topic
from tests.system.conftest import Stack

pytestmark = pytest.mark.slow


def luhn_complete(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


RUN = uuid.uuid4().hex[:6].upper()
AWS_ID = "AKIA" + "QZ7W3XR5T2YU4PLM"
DB_PASSWORD = f"Vq7!mZ2#{RUN}rT9x"
CARD_NO_BRAND = luhn_complete("90417722153366")  # 15 digits, no issuer has this range
AMEX = luhn_complete("37144963539843")
PHONE_UNASSIGNED = "(211) 555-0147"
HF_TOKEN = "hf_" + "Qk29XbLmT7vWc4RzN8pD3sYfG6hJ1aEuVo"
NAMES = ("Oluwaseun Okonkwo-Bright", "Małgorzata Wiśniewska", "Haruto Fujisawa")
# the types without a recognizer before: street addresses, dates of birth, passports and their zones
STREET = "4417 Larkspur Ave"
RUA = "Rua Visconde de Pirajá, 318"
DOB = "19 November 1963"
DOB_ISO = "1963-11-19"
PASSPORT = "K7Q402185"
CAPS_NAME = "ADAOBI NWANKWO"


def mrz_zone() -> tuple[str, str]:
    """A TD3 zone (ICAO 9303) for the canary passport, check digits computed as the standard says."""
    number, birth, expiry = PASSPORT, "631119", "310402"
    line2 = f"{number}{check_digit(number)}NGA{birth}{check_digit(birth)}F{expiry}{check_digit(expiry)}"
    line2 += "<" * 14 + check_digit("<" * 14)
    composite = line2[0:10] + line2[13:20] + line2[21:43]
    return ("P<NGANWANKWO<<ADAOBI<CHIOMA").ljust(44, "<"), line2 + check_digit(composite)


MRZ = mrz_zone()
CANARIES = [AWS_ID, DB_PASSWORD, CARD_NO_BRAND, AMEX, PHONE_UNASSIGNED, HF_TOKEN, *NAMES, STREET, RUA, DOB,
            DOB_ISO, PASSPORT, CAPS_NAME, *MRZ, "NWANKWO<<ADAOBI"]  # fmt: skip


def conversation() -> list[dict]:
    return [
        {"role": "system", "content": "You are a support agent. Be brief."},
        {
            "role": "user",
            "content": f"I spoke with {NAMES[0]} yesterday. Please charge card {CARD_NO_BRAND} again "
            f"and call me back at {PHONE_UNASSIGNED}. Here's the token: {HF_TOKEN}",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "update_setting",
                        "arguments": json.dumps({"field": "db_url_password", "value": DB_PASSWORD}),
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps(
                {
                    "customer_name": NAMES[1],
                    "contact": PHONE_UNASSIGNED,
                    "credit_card": AMEX,
                    "config": f'[default]\nregion = eu-west-1\ntoken = "{AWS_ID}"\n',
                    "shipping_address": f"{RUA}, Ipanema, Rio de Janeiro",
                    "date_of_birth": DOB_ISO,
                    "passport_no": PASSPORT,
                    "beneficiary": CAPS_NAME,
                    "scan": "\n".join(MRZ),
                },
                ensure_ascii=False,
            ),
        },
        {
            "role": "user",
            "content": f"Also, Dear {NAMES[2]} asked for the invoice to go out today. Ship the spare to "
            f"{STREET}, Apt 3, Tulsa; the account holder was born on {DOB}, passport number {PASSPORT}.",
        },
    ]


def send_canaries(stack: Stack) -> list[str]:
    """One trajectory with an explicit id, one linked by history; returns their ids."""
    key = next(k for k, tenant in stack.keys.items() if tenant == "acme")
    tid = f"canary-{RUN.lower()}"
    ids = [scoped_trajectory_id("acme", tid)]  # ids are scoped by tenant at rest (``acme~canary-...``)
    explicit = openai.OpenAI(base_url=f"{stack.root}/v1", api_key=key, max_retries=0,
                             default_headers={"x-sluice-trajectory-id": tid})  # fmt: skip
    linked = openai.OpenAI(base_url=f"{stack.root}/v1", api_key=key, max_retries=0)
    messages = conversation()
    for n in (2, 4, 5):
        explicit.chat.completions.create(model="sluice-tiny", messages=messages[:n], max_tokens=8)
    history = conversation()[:2]
    raw = linked.chat.completions.with_raw_response.create(
        model="sluice-tiny", messages=history, max_tokens=8
    )
    ids.append(raw.headers["x-sluice-trajectory-id"])
    reply = raw.parse().choices[0].message
    history += [{"role": "assistant", "content": reply.content or ""}, conversation()[4]]
    linked.chat.completions.create(model="sluice-tiny", messages=history, max_tokens=8)
    for t in ids:
        resp = httpx.post(f"{stack.root}/v1/trajectories/{t}/end", headers={"Authorization": f"Bearer {key}"},
                          json={"outcome": "done"}, timeout=10)  # fmt: skip
        assert resp.status_code < 300, resp.text
    return ids


def files_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()) if root.exists() else b""


def raw_token_runs(obj: object) -> list[list[int]]:
    """Lists of 8+ integers anywhere in a JSON value: raw token ids (the linking state must hold hashes)."""
    if isinstance(obj, dict):
        return [r for v in obj.values() for r in raw_token_runs(v)]
    if isinstance(obj, list):
        if len(obj) >= 8 and all(isinstance(x, int) and not isinstance(x, bool) for x in obj):
            return [obj]
        return [r for v in obj for r in raw_token_runs(v)]
    return []


def test_canaries_of_every_class_are_nowhere_at_rest(stack: Stack) -> None:
    assert stack.cfg.redaction.ner, "the shipped config must run NER"
    report = stack.send(6, seed=11)  # a seed of its own: the faults' traffic shares the stack
    ids = send_canaries(stack)
    stack.wait_complete(report)
    stack.wait_landed(ids)
    stack.sup.restart("proxy")  # a graceful stop writes the linking state (links.json) to the spool dir
    # the write-ahead log keeps acknowledged raw events until their segment rotates (README: "acknowledged
    # segments go within proxy.wal_segment_max_age_s"): the spool is held to that bound, not to none
    spool_clean_by = time.monotonic() + stack.cfg.proxy.wal_segment_max_age_s + 10

    haystacks: dict[str, bytes] = {}
    tables = stack.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'store'")
    assert tables
    for t in tables:
        haystacks[f"duckdb:{t['table_name']}"] = repr(
            stack.query(f"SELECT * FROM store.{t['table_name']}")
        ).encode()
    stored = stack.query(
        f"SELECT count(*) AS n FROM steps WHERE trajectory_id IN ({', '.join(repr(i) for i in ids)})"
    )
    assert stored[0]["n"] == 5
    for logical in ("steps_redacted", "trajectories_audited", "trajectories_train"):
        records = read_whole_topic(stack.cfg.broker, stack.cfg.topics.name(logical), timeout_s=15)
        haystacks[f"topic:{logical}"] = b"\n".join(v or b"" for _, v in records)
    assert haystacks["topic:steps_redacted"] and haystacks["topic:trajectories_audited"]
    for name in [
        *changelog_topics(stack.cfg.topics, stack.cfg.stages),
        ticks_topic(stack.cfg.topics, stack.cfg.stages),
    ]:  # the stage tables' changelogs
        haystacks[f"topic:{name}"] = b"\n".join(v or b"" for _, v in read_whole_topic(stack.cfg.broker, name))
    haystacks["rocksdb"] = files_under(stack.cfg.path(stack.cfg.stages.data_dir))
    spool = stack.cfg.path(stack.cfg.proxy.spool_dir)
    watched = [c.encode() for c in [*CANARIES, *canaries()]]
    while any(c in files_under(spool) for c in watched) and time.monotonic() < spool_clean_by:
        time.sleep(0.5)
    haystacks["spool"] = files_under(spool)
    haystacks["logs"] = stack.log.getvalue().encode() + files_under(stack.path.parent / "logs")
    persona_names = [p.name for p in PERSONAS]
    for where, blob in haystacks.items():
        text = blob.decode("utf-8", "replace")
        unescaped = blob.decode("unicode_escape", "replace") if b"\\u" in blob else text
        for canary in [*CANARIES, *canaries(), *persona_names]:
            assert canary not in text and canary not in unescaped, f"{canary!r} leaked into {where}"
        for key in stack.keys:
            assert key not in text, f"an API key leaked into {where}"

    links = spool / "links.json"
    assert links.exists()
    runs = raw_token_runs(json.loads(links.read_text()))
    assert runs == [], f"links.json keeps {len(runs)} raw token id sequences (must hold hashes only)"


def test_forwarded_calls_reach_the_model_server_and_are_kept_nowhere(stack: Stack) -> None:
    """An agent's embeddings go through the same base URL to the local model server (real vectors) and,
    not being steps, are written nowhere: not even the raw topic or the proxy's write-ahead log."""
    key = next(k for k, tenant in stack.keys.items() if tenant == "acme")
    secret = f"embedding-canary-{uuid.uuid4().hex}"
    client = openai.OpenAI(base_url=f"{stack.root}/v1", api_key=key, max_retries=0)
    got = client.embeddings.create(model="sluice-tiny", input=[f"customer note {secret}", "another note"])
    assert len(got.data) == 2 and len(got.data[0].embedding) > 8
    assert got.data[0].embedding != got.data[1].embedding
    raw_steps = read_whole_topic(stack.cfg.broker, stack.cfg.topics.name("steps_raw"), linger_s=2.0)
    places = {
        "topic:steps_raw": b"\n".join(v or b"" for _, v in raw_steps),
        "spool": files_under(stack.cfg.path(stack.cfg.proxy.spool_dir)),
        "logs": stack.log.getvalue().encode() + files_under(stack.path.parent / "logs"),
        "duckdb": repr(stack.query("SELECT * FROM store.steps")).encode(),
    }
    assert places["topic:steps_raw"], "the raw topic holds the steps of the other test"
    for where, blob in places.items():
        assert secret.encode() not in blob, f"a forwarded call was kept in {where}"


def test_a_tool_error_lands_as_a_reward_on_the_calling_step(stack: Stack) -> None:
    """A forced tool call, then the tool's answer in its own error format (a JSON ``error`` body): the
    reward join harvests it as a reward on the calling step, source ``harvest:tool_error``, and the stored
    version's eligibility reasons name it."""
    key = next(k for k, tenant in stack.keys.items() if tenant == "acme")
    tid = f"tool-error-{RUN.lower()}"
    client = openai.OpenAI(base_url=f"{stack.root}/v1", api_key=key, max_retries=0,
                           default_headers={"x-sluice-trajectory-id": tid})  # fmt: skip
    tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}}]  # fmt: skip
    messages: list[dict] = [{"role": "user", "content": "Where is my order?"}]
    first = client.chat.completions.create(model="sluice-tiny", messages=messages, max_tokens=8, tools=tools,
                                           tool_choice={"type": "function", "function": {"name": "lookup_order"}})  # fmt: skip
    call = first.choices[0].message.tool_calls[0]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": json.dumps({"error": "order service unavailable"}),
        },
    ]
    client.chat.completions.create(model="sluice-tiny", messages=messages, max_tokens=8)
    resp = httpx.post(f"{stack.root}/v1/trajectories/{tid}/end", headers={"Authorization": f"Bearer {key}"},
                      json={"outcome": "done"}, timeout=10)  # fmt: skip
    assert resp.status_code < 300, resp.text
    stored = scoped_trajectory_id("acme", tid)
    stack.wait_landed([stored])
    rewards = stack.query(
        f"SELECT name, source, step_index, value FROM rewards WHERE trajectory_id = '{stored}' ORDER BY name"
    )
    assert {"name": "tool_error", "source": "harvest:tool_error", "step_index": 0, "value": 0.0} in rewards
    reasons = stack.query(
        f"SELECT eligibility_reasons FROM trajectory_versions WHERE trajectory_id = '{stored}' ORDER BY version"
    )
    assert "harvested:tool_error@0" in reasons[-1]["eligibility_reasons"]
