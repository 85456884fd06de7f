"""The independent redaction evaluation set: multi-turn trajectories with planted values, and clean ones.

Written apart from the recognizers (values from providers' documented formats in ``unseen_values``,
shapes of real traffic in ``unseen_carriers``) so that it measures redaction on data the recognizers
were not written against; ``bench/data/redaction_eval_set.py`` remains the set they were tuned on.
Each trajectory is a list of ``(role, text)`` turns that ``as_steps`` turns into the step events the
proxy publishes. A planted value names the strings that must not survive redaction (``checks``: the
value itself and, for long secrets, a 16-character piece of its middle; for a person the full name and
the family name). Clean trajectories carry only near-miss text: anything redacted there is a false
placeholder.

    python -m bench.data.unseen_eval_set --summary
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter

from pydantic import BaseModel, Field

from bench.data import unseen_carriers as uc
from bench.data import unseen_values as uv
from sluice.events import Action, Choice, Message, Observation, StepEvent, ToolCall

STRUCTURED_KINDS = (
    *uc.SECRET_KEYS, "PRIVATE_KEY", "URL_PASSWORD", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD",
    "IBAN_CODE", "IP_ADDRESS", "US_SSN",
)  # fmt: skip
SHAPED_SECRETS = ("AWS_ACCESS_KEY_ID", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "SLACK_TOKEN",
                  "STRIPE_KEY", "GOOGLE_API_KEY", "JWT", "VENDOR_TOKEN")  # fmt: skip


class Planted(BaseModel):
    kind: str
    variant: str = Field(description="Carrier and sub-format, for per-variant leak figures.")
    checks: list[str] = Field(description="Strings that must not appear in the redacted output.")


class Turn(BaseModel):
    role: str
    text: str
    planted: list[Planted] = Field(default_factory=list)


class UnseenTrajectory(BaseModel):
    trajectory_id: str
    clean: bool
    turns: list[Turn]


def _checks(value: str) -> list[str]:
    if len(value) >= 24:
        mid = len(value) // 2
        return [value, value[mid - 8 : mid + 8]]
    return [value]


def _secret_turn(rng: random.Random, kind: str) -> Turn:
    value = uv.GENERATORS[kind](rng)
    if kind in SHAPED_SECRETS and rng.random() < 0.35:
        carrier = rng.choice(uc.CONTEXT_FREE)
        name = carrier.__name__
    else:
        key = rng.choice(uc.SECRET_KEYS[kind])
        make = rng.choice(uc.SECRET_CARRIERS)
        carrier, name = make(key), f"{make.__name__}:{key}"
    role, text = carrier(rng, value)
    return Turn(role=role, text=text, planted=[Planted(kind=kind, variant=name, checks=_checks(value))])


def _pii_turn(rng: random.Random, kind: str) -> Turn:
    variant = ""
    if kind == "PRIVATE_KEY":
        value = uv.private_key_body(rng)
        role, text = uc.private_key_carrier(rng, value)
        body = value.splitlines()[1]
        return Turn(
            role=role, text=text, planted=[Planted(kind=kind, variant="pem", checks=[body, body[20:36]])]
        )
    if kind == "URL_PASSWORD":
        value = uv.password(rng).replace("@", "#").replace("/", "_")
        role, text = uc.url_with_password(rng, value)
        return Turn(role=role, text=text, planted=[Planted(kind=kind, variant="url", checks=[value])])
    if kind == "PHONE_NUMBER":
        us = rng.random() < 0.6
        value = uv.us_phone(rng) if us else uv.intl_phone(rng)
        variant = "us" if us else "intl"
        fields, header, texts = (
            ("phone", "contact", "mobile", "tel", "callback_number", "phone_number"),
            "phone",
            uc.PHONE_TEXT,
        )
    elif kind == "CREDIT_CARD":
        variant, value = uv.card_number(rng)
        fields, header, texts = (
            ("credit_card", "card_number", "pan", "payment_card", "cc_number"),
            "card",
            uc.CARD_TEXT,
        )
    elif kind == "EMAIL_ADDRESS":
        value = uv.email(rng)
        fields, header, texts = ("email", "contact_email", "e-mail", "reply_to"), "email", uc.EMAIL_TEXT
    elif kind == "IBAN_CODE":
        value = uv.iban(rng)
        fields, header, texts = ("iban", "bank_account", "payout_account"), "iban", uc.IBAN_TEXT
    elif kind == "IP_ADDRESS":
        value = uv.ip_address(rng)
        fields, header, texts = ("client_ip", "remote_addr", "source_ip"), "ip", uc.IP_TEXT
    else:
        value = uv.us_ssn(rng)
        fields, header, texts = ("ssn", "social_security_number", "tax_id"), "ssn", uc.SSN_TEXT
    pick = rng.randrange(3)
    if pick == 0:
        field = rng.choice(fields)
        carrier, name = uc.contact_record(field), f"record:{field}"
    elif pick == 1:
        carrier, name = uc.csv_row(header), "csv"
    else:
        carrier, name = uc.prose(texts), "prose"
    role, text = carrier(rng, value)
    return Turn(
        role=role,
        text=text,
        planted=[Planted(kind=kind, variant=f"{variant}:{name}".strip(":"), checks=[value])],
    )


def _person_turn(rng: random.Random) -> Turn:
    locale, full, given, family = uv.person_name(rng)
    if rng.random() < 0.5:
        role, text = uc.person_record(rng, full, given, family)
        variant = "record"
    else:
        role, text = uc.prose(uc.PERSON_TEXT)(rng, full)
        variant = "prose"
    checks = [full, family] if full in text else [family]
    return Turn(
        role=role, text=text, planted=[Planted(kind="PERSON", variant=f"{locale}:{variant}", checks=checks)]
    )


def _clean_turn(rng: random.Random) -> Turn:
    role, text = uc.clean_text(rng)
    return Turn(role=role, text=text)


def build_unseen_set(seed: int, n_planted: int = 300, n_clean: int = 100) -> list[UnseenTrajectory]:
    """``n_planted`` trajectories with 4-8 planted values each among clean turns; ``n_clean`` clean ones."""
    rng = random.Random(seed)
    out: list[UnseenTrajectory] = []
    kinds = [*STRUCTURED_KINDS, "PERSON", "PERSON", "PERSON"]
    for t in range(n_planted):
        turns: list[Turn] = []
        for _ in range(rng.randint(4, 8)):
            kind = rng.choice(kinds)
            if kind == "PERSON":
                turns.append(_person_turn(rng))
            elif kind in uc.SECRET_KEYS:
                turns.append(_secret_turn(rng, kind))
            else:
                turns.append(_pii_turn(rng, kind))
            turns += [_clean_turn(rng) for _ in range(rng.randint(0, 2))]
        out.append(UnseenTrajectory(trajectory_id=f"unseen-{t:04d}", clean=False, turns=turns))
    for t in range(n_clean):
        turns = [_clean_turn(rng) for _ in range(rng.randint(6, 12))]
        out.append(UnseenTrajectory(trajectory_id=f"clean-{t:04d}", clean=True, turns=turns))
    return out


def as_steps(traj: UnseenTrajectory, tenant: str = "acme") -> list[StepEvent]:
    """The trajectory as delta step events: user/tool turns observed, assistant/call turns the action."""
    steps: list[StepEvent] = []
    pending: list[Message] = [Message(role="user", content="Help me with the account below.")]
    last_call = "call_0"

    def act(content: str, call_args: str | None) -> None:
        nonlocal pending, last_call
        k = len(steps)
        calls = None
        if call_args is not None:
            last_call = f"call_{k}"
            calls = [ToolCall(id=last_call, name="update_record", arguments=call_args)]
        msg = Message(role="assistant", content=content, tool_calls=calls)
        obs = Observation(messages=pending)
        steps.append(StepEvent(trajectory_id=traj.trajectory_id, tenant=tenant, step_index=k, observation=obs,
                               action=Action(choices=[Choice(message=msg, finish_reason="tool_calls" if calls else "stop")])))  # fmt: skip
        pending = []

    for turn in traj.turns:
        if turn.role == "user":
            pending.append(Message(role="user", content=turn.text))
        elif turn.role == "tool":
            if not pending or pending[-1].role != "user":
                pending.append(Message(role="tool", tool_call_id=last_call, name="lookup", content=turn.text))
            else:
                pending.append(Message(role="user", content=turn.text))
        elif turn.role == "assistant":
            act(turn.text, None)
        else:
            act("Updating the record.", turn.text)
    if pending or not steps:
        act("Done.", None)
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7331)
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args()
    trajs = build_unseen_set(args.seed)
    kinds = Counter(p.kind for t in trajs for turn in t.turns for p in turn.planted)
    print(
        json.dumps(
            {
                "trajectories": len(trajs),
                "steps": sum(len(as_steps(t)) for t in trajs),
                "planted": dict(kinds),
            }
        )
    )
    if not args.summary:
        for turn in trajs[0].turns:
            print(turn.role, "|", turn.text[:160].replace("\n", " / "))


if __name__ == "__main__":
    main()
