"""Secrets and contact data named in other languages and written in other layouts: non-English field names
and prose, Markdown tables, XML elements, JSON logged with escaped quotes, cookie headers in JSON, vendor
tokens without digits, dotted passwords, numbers written in pairs, sudo and mysql forms, decoded
Kubernetes secrets, Terraform defaults. Each with the near misses that must stay as they are."""

from __future__ import annotations

import json

import pytest

from governance.config import RedactionConfig
from governance.redaction import Redactor
from governance.redaction.key_context import code_or_placeholder, looks_like_token, names_kind, names_secret
from sluice.events import StepEvent, encode
from tests.trainers.live.builders import step


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor.from_config(RedactionConfig())


def redacted(redactor: Redactor, text: str) -> str:
    return redactor.redact_text(text)[0]


def redacted_tool_result(redactor: Redactor, content: str) -> str:
    data = json.loads(encode(step(0, [1, 2], [3])))
    data["observation"]["messages"].append({"role": "tool", "tool_call_id": "c1", "content": content})
    event, _ = redactor.redact_data(data, None)
    assert isinstance(event, StepEvent)
    return str(event.observation.messages[-1].content)


@pytest.mark.parametrize(
    "key",
    ["Passwort", "kennwort", "contraseña", "senha", "mot_de_passe", "wachtwoord", "hasło", "lösenord",
     "пароль", "密码", "パスワード", "비밀번호", "pw", "psk", ".dockerconfigjson"],
)  # fmt: skip
def test_password_names_in_other_languages_name_a_secret(key: str) -> None:
    assert names_secret(key) == "strong"


@pytest.mark.parametrize("key", ["password-stdin", "password_policy", "kennwort_hint", "token_count"])
def test_names_about_a_secret_name_none(key: str) -> None:
    assert names_secret(key) == ""


@pytest.mark.parametrize(
    ("key", "kind"),
    [("telefone", "PHONE_NUMBER"), ("teléfono", "PHONE_NUMBER"), ("電話番号", "PHONE_NUMBER"),
     ("correo", "EMAIL_ADDRESS"), ("courriel", "EMAIL_ADDRESS")],
)  # fmt: skip
def test_contact_names_in_other_languages(key: str, kind: str) -> None:
    assert kind in names_kind(key)


@pytest.mark.parametrize(
    ("value", "code"),
    [("settings.DB_PASSWORD", True), ("config.db.password", True), ("self.password", True),
     ("vault.read('db')", True), ("Harbor.Lights71", False), ("Q7rt5.orange", False), ("lantern.moss42", False)],
)  # fmt: skip
def test_a_dotted_password_is_not_code(value: str, code: bool) -> None:
    assert code_or_placeholder(value) is code


def test_a_plain_url_is_not_a_token() -> None:
    assert not looks_like_token("https://accounts.example.com/o/oauth2/token")
    assert looks_like_token("https://svc:Pa55-word@git.example.com/r.git")


@pytest.mark.parametrize(
    ("data", "secret"),
    [
        ({"Benutzer": {"Passwort": "Winterhafen1987!"}}, "Winterhafen1987!"),
        ({"cliente": {"contraseña": "Roble&Nube55"}}, "Roble&Nube55"),
        ({"utilisateur": {"mot_de_passe": "Brume#Lac09"}}, "Brume#Lac09"),
        ({"ユーザー": {"パスワード": "Sakura-Kaze-771"}}, "Sakura-Kaze-771"),
        ({"db": {"password": "Harbor.Lights71"}}, "Harbor.Lights71"),
        ({"network": {"psk": "amber-violet-canyon-18"}}, "amber-violet-canyon-18"),
        ({"contato": {"telefone": "(11) 98765-4321"}}, "98765-4321"),
        ({"contact": {"phone": "01-42-68-53-00"}}, "01-42-68-53-00"),
        ({"headers": {"Set-Cookie": "session_id=Zk2pQ8vR4mW9tY1uE6oI3aS7; Path=/; HttpOnly"}}, "Zk2pQ8vR4mW9tY1uE6oI3aS7"),
    ],
)  # fmt: skip
def test_values_under_keys_in_other_languages_and_headers(
    redactor: Redactor, data: dict, secret: str
) -> None:
    assert secret not in redacted_tool_result(redactor, json.dumps(data, ensure_ascii=False))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Oi! A minha senha é Cafe7.Forte e o resto", "Cafe7.Forte"),
        ("Hola, la contraseña: Pino!Verde42, gracias", "Pino!Verde42"),
        ("Merci — mot de passe : Soleil&Mer2030", "Soleil&Mer2030"),
        ("Das Kennwort für das Konto lautet Bergsee2019_ bitte", "Bergsee2019_"),
        ("パスワード: Yama*Kawa#55\n", "Yama*Kawa#55"),
        ("| user | phone |\n|---|---|\n| ops | 0612 345678 |\n", "0612 345678"),
        ("<config><apiKey>Zx81Lm20Qp93Rt47</apiKey></config>", "Zx81Lm20Qp93Rt47"),
        ('log body="{\\"user\\": \\"k\\", \\"password\\": \\"Otter-Lake-88\\"}" end', "Otter-Lake-88"),
        ("HUGGINGFACE=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
        ("VAULT_TOKEN hvs.CAESIJ3kq9XvTnYpLw2Rb8sUfGhE", "hvs.CAESIJ3kq9XvTnYpLw2Rb8sUfGhE"),
        ("Kind regards,\nAda\nT: 0471 22 33 44\nM. 06.12.34.56.78", "06.12.34.56.78"),
        ("Kind regards,\nAda\nT: 0471 22 33 44\n", "0471 22 33 44"),
        ("mysql -h db -u admin -p'Granite#Owl-31' shop", "Granite#Owl-31"),
        ("sudo -S <<< 'Birch!Fox77' apt-get upgrade", "Birch!Fox77"),
        ("echo \"Maple#Ray12\" | sudo -S reboot", "Maple#Ray12"),
        ("$ kubectl get secret api -o jsonpath='{.data.token}' | base64 --decode\nsilver-heron-wind-62\n$ ls", "silver-heron-wind-62"),
        ('variable "admin_password" {\n  type    = string\n  default = "Quartz-Fern-204"\n}', "Quartz-Fern-204"),
        ('variable "seed" {\n  sensitive = true\n  default   = "Lumen&Tide8"\n}', "Lumen&Tide8"),
    ],
)  # fmt: skip
def test_secrets_and_numbers_in_text_layouts(redactor: Redactor, text: str, secret: str) -> None:
    assert secret not in redacted(redactor, text)


@pytest.mark.parametrize(
    "text",
    [
        "CONTAINER   PORTS\nabc123   0.0.0.0:8443->443/tcp",
        "export NO_PROXY=localhost,127.0.0.1,::1",
        '{"token_uri": "https://oauth2.example.com/token"}',
        "docker login ghcr.io -u bot --password-stdin",
        'variable "region" {\n  default = "eu-west-3"\n}',
        "| step | status |\n|---|---|\n| build | 0612 done |",
        "oid 1.3.6.1.4.1.2021 and build 10.0.22631.2861",
        "<version>4.12.1</version> <passwordPolicy>strict</passwordPolicy>",
        "order ORD4111111111111111 shipped, ref TX4012888888881881Z",  # card-valid digits glued into ids
    ],
)
def test_near_misses_stay(redactor: Redactor, text: str) -> None:
    assert redacted(redactor, text) == text


def test_a_clock_reading_near_a_phone_word_is_not_a_phone(redactor: Redactor) -> None:
    out = redacted(redactor, "phone +44 20 7946 0958, ts 1717171717171 and 1717171717")
    assert "1717171717171" in out and " 1717171717" in out and "7946" not in out
