"""Deterministic generator of the held-out personal-data evaluation corpus (stdlib only, Python 3.11).

    python make_corpus.py                 # writes corpus.jsonl next to this file, prints counts
    python make_corpus.py --seed 7 --out /tmp/other.jsonl

Each line is one record: id, class, carrier, text or data (+ tool for tool carriers), must_redact,
must_keep, and culture / country / lang / brand / cue where they apply. The generator checks itself
before writing: MRZ, Luhn and ISBN-13 check digits; every must_redact and must_keep string present in
the record; no must_keep string touched by a must_redact string; no piece of a value (a family name, a
street line) occurring anywhere except inside the value; no string quoted in the task brief reused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import Counter
from pathlib import Path

import carriers as cr
import corpus_addresses as ca
import corpus_values as cv
from clean_records import gen_clean
from corpus_checks import check, self_test
from number_records import gen_card, gen_phone, gen_ssn

SEED = 20261205


class Corpus:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.records: list[dict] = []
        self.counter: Counter[str] = Counter()

    def add(self, cls: str, carrier: str, body: dict, values: list[str], pieces: list[str] = (),
            keep: list[str] = (), **extra: object) -> None:  # fmt: skip
        self.counter[cls] += 1
        rec: dict = {"id": f"{cls}-{self.counter[cls]:03d}", "class": cls, "carrier": carrier, **body}
        rec["must_redact"] = list(dict.fromkeys([*values, *pieces]))
        rec["must_keep"] = list(dict.fromkeys(keep))
        rec.update({k: v for k, v in extra.items() if v is not None})
        rec["_values"] = list(values)
        self.records.append(rec)


# ----------------------------------------------------------------------------- addresses


def gen_address(c: Corpus, n: int = 42) -> None:
    rng = c.rng
    countries = list(ca.ADDRESS_BUILDERS)
    generic_keys = ["address", "addr", "shipping_address", "street", "home_address", "billing_address"]
    for i in range(n):
        cc = countries[i % len(countries)]
        build, lang, key = ca.ADDRESS_BUILDERS[cc]
        full, line = build(rng)
        carrier = cr.ALL[(i * 4 + i // len(countries)) % len(cr.ALL)]
        ctx = cr.context(rng)
        keep = [v for _, v in ctx]
        if carrier in cr.TEXT_PROSE:
            body = cr.render(rng, carrier, [], ctx, rng.choice(ca.ADDRESS_PROSE[lang]).format(a=full))
            c.add("address", carrier, body, [full], [line], keep, country=cc, lang=lang)
        elif i % 3 == 2 and full.startswith(line):  # split into street + locality fields
            rest = full[len(line) :].lstrip(", ")
            fields = [("street", line), ("locality", rest), ("country", cc)]
            c.add("address", carrier, cr.render(rng, carrier, fields, ctx), [line], [], keep, country=cc,
                  lang=lang, variant="split_fields")  # fmt: skip
        else:
            k = key if i % 2 == 0 else rng.choice(generic_keys)
            c.add("address", carrier, cr.render(rng, carrier, [(k, full)], ctx), [full], [line], keep,
                  country=cc, lang=lang, key=k)  # fmt: skip


# ----------------------------------------------------------------------------- dates of birth


def _fmt(lang: str, style: int, y: int, m: int, d: int) -> str:
    styles = {
        "en": [f"{y}-{m:02d}-{d:02d}", f"{d} {cv.month('en', m)} {y}", f"{cv.month('en', m)} {d}, {y}",
               f"{d:02d}/{m:02d}/{y}", f"{m:02d}/{d:02d}/{y}"],
        "fr": [f"{d} {cv.month('fr', m)} {y}", f"{d:02d}/{m:02d}/{y}"],
        "de": [f"{d:02d}.{m:02d}.{y}", f"{d}. {cv.month('de', m)} {y}"],
        "pt": [f"{d:02d}/{m:02d}/{y}", f"{d} de {cv.month('pt', m)} de {y}"],
        "es": [f"{d:02d}/{m:02d}/{y}", f"{d} de {cv.month('es', m)} de {y}"],
        "it": [f"{d:02d}/{m:02d}/{y}", f"{d} {cv.month('it', m)} {y}"],
        "pl": [f"{d:02d}.{m:02d}.{y}", f"{d} {cv.month('pl', m)} {y}"],
        "ja": [f"{y}年{m}月{d}日", f"{y}-{m:02d}-{d:02d}"],
        "nl": [f"{d:02d}-{m:02d}-{y}", f"{d} {cv.month('nl', m)} {y}"],
    }  # fmt: skip
    s = styles[lang]
    return s[style % len(s)]


DOB_PROSE = {
    "en": ["The applicant was born {d}; appointment booked for {o}.", "Patient DOB: {d}. Next review due {o}.",
           "Please verify: date of birth {d}, account opened {o}.", "Policyholder d.o.b. {d} - renewal date {o}.",
           "He says he was born on {d} but the form dated {o} has a different year."],
    "fr": ["Le client est né le {d} à Lyon ; rendez-vous le {o}.", "Titulaire née le {d}. Contrat signé le {o}."],
    "de": ["Die Kundin ist geboren am {d}, Termin am {o}.", "Geburtsdatum: {d}. Vertrag vom {o}."],
    "pt": ["Data de nascimento: {d}. Consulta marcada para {o}.", "O titular nasceu em {d}; cadastro feito em {o}."],
    "es": ["Fecha de nacimiento: {d}. Cita programada el {o}.", "El paciente nació el {d}; alta el {o}."],
    "it": ["Il richiedente è nato il {d}, appuntamento il {o}.", "Cliente nata il {d}. Ordine del {o}."],
    "pl": ["Pacjent urodzony {d}, wizyta kontrolna {o}.", "Data urodzenia: {d}. Umowa z dnia {o}.",
           "Wnioskodawczyni urodzona {d} r., wniosek złożony {o}."],
    "ja": ["生年月日：{d}　予約日：{o}", "お客様の生年月日は{d}です。申込日は{o}。"],
    "nl": ["Klant geboren op {d}, afspraak op {o}."],
}  # fmt: skip
DOB_KEYS = ["dob", "birth_date", "birthdate", "date_of_birth", "geburtsdatum", "data_nascimento",
            "fecha_nacimiento", "dateOfBirth", "DOB", "data_urodzenia", "date_de_naissance"]  # fmt: skip
KEY_LANG = {"geburtsdatum": "de", "data_nascimento": "pt", "fecha_nacimiento": "es", "data_urodzenia": "pl",
            "date_de_naissance": "fr"}  # fmt: skip


def gen_dob(c: Corpus, n: int = 38) -> None:
    rng = c.rng
    langs = list(DOB_PROSE)
    for i in range(n):
        y, m, d = cv.random_date(rng, 1941, 2006)
        oy, om, od = cv.random_date(rng, 2024, 2026)
        style = rng.randint(0, 4)
        if i % 2 == 0:
            lang = langs[(i // 2) % len(langs)]
            dob, other = _fmt(lang, style, y, m, d), _fmt(lang, style, oy, om, od)
            carrier = "chat_user" if i % 4 == 0 else "email"
            sentence = rng.choice(DOB_PROSE[lang]).format(d=dob, o=other)
            body = cr.render(rng, carrier, [], [("order_id", f"ORD-{oy}-{cr.digits(rng, 6)}")], sentence)
            c.add("dob", carrier, body, [dob], [], [other, *_refs(body)], lang=lang)
        else:
            key = DOB_KEYS[(i // 2) % len(DOB_KEYS)]
            lang = KEY_LANG.get(key, "en")
            dob = _fmt(lang, 0 if lang in ("en", "ja") else style, y, m, d)
            carrier = cr.STRUCTURED[(i // 2) % len(cr.STRUCTURED)]
            ctx = [("created_at", cr.timestamp(rng)), ("due_date", f"{oy}-{om:02d}-{od:02d}")]
            c.add("dob", carrier, cr.render(rng, carrier, [(key, dob)], ctx), [dob], [], [v for _, v in ctx],
                  lang=lang, key=key)  # fmt: skip


def _refs(body: dict) -> list[str]:
    text = body.get("text", "")
    return [w.strip("().,") for w in text.split() if w.startswith(("ORD-", "(ORD-"))][:1]


# ----------------------------------------------------------------------------- passports


def passport_number(rng: random.Random, cc: str) -> str:
    d = lambda n: cr.digits(rng, n)  # noqa: E731
    letters = lambda n: "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(n))  # noqa: E731
    return {
        "US": lambda: letters(1) + d(8), "GB": lambda: d(9), "FR": lambda: d(2) + letters(2) + d(5),
        "DE": lambda: rng.choice("CFGHJK") + "".join(rng.choice("CFGHJKLMNPRTVWXYZ0123456789") for _ in range(8)),
        "PL": lambda: letters(2) + d(7), "BR": lambda: letters(2) + d(6), "IN": lambda: letters(1) + d(7),
        "JP": lambda: letters(2) + d(7), "NG": lambda: letters(1) + d(8), "CN": lambda: "E" + d(8),
        "KR": lambda: "M" + d(8), "ES": lambda: letters(3) + d(6), "IT": lambda: letters(2) + d(7),
        "VN": lambda: letters(1) + d(7), "SA": lambda: letters(1) + d(8), "AT": lambda: letters(1) + d(7),
    }[cc]()  # fmt: skip


PASSPORT_PROSE = [
    ("en", "For the visa form: passport no. {p}, issued {o}."),
    ("en", "Check-in keeps failing, Passport Number: {p} - booking made {o}."),
    ("en", "my passport # is {p} if you need it for the hotel booked on {o}"),
    ("de", "Reisepass-Nr. {p}, ausgestellt am {o}, bitte für die Buchung verwenden."),
    ("fr", "Voici mon numéro de passeport {p} (demande du {o})."),
    ("pt", "Segue o passaporte nº {p}, emitido em {o}."),
    ("es", "Mi número de pasaporte es {p}; la reserva es del {o}."),
    ("it", "Numero di passaporto {p}, prenotazione del {o}."),
    ("pl", "Numer paszportu: {p}. Rezerwacja z {o}."),
    ("ja", "旅券番号：{p}（申請日 {o}）"),
]
PASSPORT_KEYS = ["passport", "passport_number", "passportNo", "passport_no", "reisepass_nr",
                 "numero_passaporte", "travel_document_number"]  # fmt: skip
STATE = {"US": "USA", "GB": "GBR", "FR": "FRA", "DE": "D<<", "PL": "POL", "BR": "BRA", "IN": "IND", "JP": "JPN",
         "NG": "NGA", "CN": "CHN", "KR": "KOR", "ES": "ESP", "IT": "ITA", "VN": "VNM", "SA": "SAU", "AT": "AUT"}  # fmt: skip


def _mrz_pieces(family: str, given: str) -> list[str]:
    """The zone's name field and each distinctive surname piece in zone form."""
    out = [cv.mrz_name_field(family, given)]
    for p in cv.family_tokens(family):
        z = cv.mrz_name_part(p)
        if len(z) >= 3 and "<" not in z:
            out.append(z)
    return out


def gen_passport(c: Corpus, n_prose: int = 12, n_key: int = 12, n_mrz: int = 14) -> None:
    rng = c.rng
    countries = list(STATE)
    for i in range(n_prose):
        cc = countries[i % len(countries)]
        p = passport_number(rng, cc)
        lang, tpl = PASSPORT_PROSE[i % len(PASSPORT_PROSE)]
        oy, om, od = cv.random_date(rng, 2023, 2025)
        other = _fmt(lang, 1, oy, om, od)
        carrier = "chat_user" if i % 3 else "email"
        body = cr.render(
            rng, carrier, [], [("order_id", f"BKG-{cr.digits(rng, 7)}")], tpl.format(p=p, o=other)
        )
        c.add("passport", carrier, body, [p], [], [other], country=cc, lang=lang, variant="cue_prose")
    for i in range(n_key):
        cc = countries[(i + 5) % len(countries)]
        p = passport_number(rng, cc)
        key = PASSPORT_KEYS[i % len(PASSPORT_KEYS)]
        carrier = cr.STRUCTURED[i % len(cr.STRUCTURED)]
        ctx = cr.context(rng)
        c.add("passport", carrier, cr.render(rng, carrier, [(key, p), ("nationality", STATE[cc].strip("<"))], ctx),
              [p], [], [v for _, v in ctx], country=cc, key=key, variant="key")  # fmt: skip
    for i in range(n_mrz):
        name = cv.NAMES[(i * 5 + 2) % len(cv.NAMES)]
        culture, cc, given, family, _, _ = name
        cc = cc if cc in STATE else "SA"
        p = passport_number(rng, cc)
        y, m, d = cv.random_date(rng, 1950, 2004)
        ey, em, ed = cv.random_date(rng, 2027, 2035)
        sex = rng.choice("MF")
        l1, l2 = cv.td3(STATE[cc], family, given, p, STATE[cc], f"{y % 100:02d}{m:02d}{d:02d}", sex,
                        f"{ey % 100:02d}{em:02d}{ed:02d}")  # fmt: skip
        assert cv.td3_ok(l1, l2), (l1, l2)
        dob_print = f"{d:02d} {cv.MON3[m - 1]} {y}"
        surname_print, given_print = family.upper(), given.upper()
        values = [p, l1, l2]
        pieces = _mrz_pieces(family, given)
        kind = ("ocr_passport", "ocr_passport", "tool_result", "log_line", "ocr_passport")[i % 5]
        if kind == "ocr_passport":
            noise = rng.choice(["", "|", ";", "'"])
            text = (f"PASSPORT{noise}  PASSEPORT  PASAPORTE\nType/Type  P   Code/Code  {STATE[cc].strip('<')}"
                    f"   Passport No./No. du passeport  {p}\nSurname/Nom\n{surname_print}\nGiven names/Prénoms\n"
                    f"{given_print}\nNationality/Nationalité  {STATE[cc].strip('<')}\nDate of birth/Date de naissance\n"
                    f"{dob_print}\nSex/Sexe  {sex}\nDate of expiry/Date d'expiration\n{ed:02d} {cv.MON3[em - 1]} {ey}\n"
                    f"\n{l1}\n{l2}\n")  # fmt: skip
            values += [surname_print, given_print, dob_print]
            body = {"text": text}
            keep = ["PASSPORT", "Date of birth/Date de naissance"]
        elif kind == "tool_result":
            body = {"data": {"status": "ok", "document_type": "TD3", "mrz": [l1, l2], "checks_passed": True,
                             "scanned_at": cr.timestamp(rng)}, "tool": "ocr.read_mrz"}  # fmt: skip
            keep = ["TD3", body["data"]["scanned_at"]]
        else:
            ts = cr.timestamp(rng)
            body = {
                "text": f'{ts} DEBUG kyc-worker mrz.parsed doc_type=P line1="{l1}" line2="{l2}" valid=true'
            }
            keep = [ts, "mrz.parsed"]
        c.add("passport", kind if kind != "ocr_passport" else "ocr_passport", body, values, pieces, keep,
              country=cc, culture=culture, variant="mrz_td3")  # fmt: skip


# ----------------------------------------------------------------------------- names

NAME_PROSE = [
    "Hi, this is {n} - I booked the conference room for Thursday but the invite never arrived.",
    "Can you add {n} as the second driver on the rental agreement?",
    "Please forward the signed contract to {n} in procurement.",
    "The package was signed for by {n} at the front desk.",
    "Meeting notes: {n} will own the migration plan and report back next sprint.",
    "Refund approved after a call with {n}; close the ticket when it clears.",
]
NAME_FORMS = ["prose", "caps", "mrz", "signature", "json_full", "json_split", "native", "pnr", "record"]


def gen_name(c: Corpus, n: int = 90) -> None:
    rng = c.rng
    names = list(cv.NAMES)
    rng.shuffle(names)
    for i in range(n):
        nm = names[i % len(names)]
        culture, cc, given, family, order, native = nm
        form = NAME_FORMS[i % len(NAME_FORMS)]
        if form == "native" and native is None:
            nm = rng.choice([x for x in cv.NAMES if x[5]])
            culture, cc, given, family, order, native = nm
        full = cv.full_name(nm)
        fam = [t for t in cv.family_tokens(family) if len(t) >= 3]
        ctx = cr.context(rng)
        keep = [v for _, v in ctx]
        extra = {"culture": culture, "country": cc, "form": form}
        if form == "prose":
            carrier = "chat_user"
            body = cr.render(rng, carrier, [], ctx, rng.choice(NAME_PROSE).format(n=full))
            c.add("name", carrier, body, [full], fam, keep, **extra)
        elif form == "caps":
            up = full.upper()
            carrier = rng.choice(["chat_user", "log_line"])
            if carrier == "chat_user":
                body = cr.render(
                    rng, carrier, [], ctx, f"Wire transfer beneficiary: {up}, reason INVOICE SETTLEMENT."
                )
            else:
                body = cr.render(rng, carrier, [("beneficiary", up), ("status", "PENDING_REVIEW")], ctx)
            c.add("name", carrier, body, [up], [t.upper() for t in fam], keep + ["PENDING_REVIEW"] * (carrier == "log_line"),
                  **extra)  # fmt: skip
        elif form == "mrz":
            z = cv.mrz_name_field(family, given)
            zf = [p for p in _mrz_pieces(family, given)[1:]]
            carrier = rng.choice(["chat_user", "tool_result"])
            if carrier == "chat_user":
                body = cr.render(
                    rng, carrier, [], ctx, f"The scanner only read the name line: {z} - is that enough?"
                )
            else:
                body = cr.render(rng, carrier, [("mrz_name", z), ("confidence", "0.93")], ctx)
            c.add("name", carrier, body, [z], zf, keep, **extra)
        elif form == "signature":
            role = rng.choice(
                ["Head of Procurement", "Senior Data Engineer", "Accounts Payable", "Clinic Coordinator"]
            )
            sentence = (
                f"Attached is the revised quote.\n\nBest regards,\n{full}\n{role} | Northwind Outfitters"
            )
            body = cr.render(rng, "email", [], ctx, sentence)
            c.add("name", "email", body, [full], fam, keep + [role], **extra)
        elif form == "json_full":
            key = rng.choice(
                ["name", "full_name", "contact_name", "cardholder", "passenger_name", "employee"]
            )
            carrier = rng.choice(["tool_call_args", "tool_result", "http_request"])
            c.add(
                "name",
                carrier,
                cr.render(rng, carrier, [(key, full)], ctx),
                [full],
                fam,
                keep,
                key=key,
                **extra,
            )
        elif form == "json_split":
            carrier = rng.choice(["tool_call_args", "tool_result", "sql_insert", "csv"])
            fields = [("first_name", given), ("last_name", family)]
            c.add("name", carrier, cr.render(rng, carrier, fields, ctx), [given, family], fam, keep, **extra)
        elif form == "native":
            carrier = rng.choice(["chat_user", "tool_call_args"])
            if carrier == "chat_user":
                body = cr.render(rng, carrier, [], ctx, f"担当者 / contact: {native}")
            else:
                body = cr.render(rng, carrier, [("contact", native)], ctx)
            c.add("name", carrier, body, [native], [], keep, **extra)
        elif form == "pnr":
            pnr_name = (
                f"{cv.mrz_name_part(family).replace('<', '')}/{cv.mrz_name_part(given).replace('<', '')}"
            )
            title = "MS" if rng.random() < 0.5 else "MR"
            locator = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(6))
            text = (f"{cr.timestamp(rng)} INFO booking-api pnr.created locator={locator} "
                    f"pax1={pnr_name} {title} seg=LHR-NRT fare=Y")  # fmt: skip
            c.add(
                "name",
                "log_line",
                {"text": text},
                [pnr_name],
                _mrz_pieces(family, given)[1:],
                [locator, "LHR-NRT"],
                **extra,
            )
        else:  # record: yaml
            fields = [("display_name", full), ("team", "finance-ops")]
            c.add(
                "name",
                "yaml",
                cr.render(rng, "yaml", fields, ctx),
                [full],
                fam,
                keep + ["finance-ops"],
                **extra,
            )


CLASS_GENERATORS = [gen_address, gen_dob, gen_passport, gen_name, gen_ssn, gen_phone, gen_card, gen_clean]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("corpus.jsonl"))
    args = ap.parse_args()
    self_test()
    c = Corpus(args.seed)
    for gen in CLASS_GENERATORS:
        gen(c)
    errors = {r["id"]: e for r in c.records if (e := check(r))}
    texts = Counter(
        json.dumps(r.get("text") or r.get("data"), ensure_ascii=False, sort_keys=True) for r in c.records
    )
    dups = [t for t, k in texts.items() if k > 1]
    if errors or dups:
        for rid, e in list(errors.items())[:40]:
            print(rid, e, file=sys.stderr)
        print(f"{len(errors)} records failed checks, {len(dups)} duplicate bodies", file=sys.stderr)
        sys.exit(1)
    lines = []
    for r in c.records:
        r.pop("_values")
        lines.append(json.dumps(r, ensure_ascii=False))
    payload = "\n".join(lines) + "\n"
    args.out.write_text(payload, encoding="utf-8")
    print(f"wrote {len(c.records)} records to {args.out} (seed {args.seed}, sha256 "
          f"{hashlib.sha256(payload.encode()).hexdigest()[:16]})")  # fmt: skip
    print("per class:", dict(Counter(r["class"] for r in c.records)))
    print("per carrier:", dict(Counter(r["carrier"] for r in c.records)))
    print("name cultures:", dict(Counter(r["culture"] for r in c.records if r["class"] == "name")))
    print("name forms:", dict(Counter(r["form"] for r in c.records if r["class"] == "name")))
    print("address countries:", dict(Counter(r["country"] for r in c.records if r["class"] == "address")))
    print("passport variants:", dict(Counter(r["variant"] for r in c.records if r["class"] == "passport")))
    print("dob langs:", dict(Counter(r["lang"] for r in c.records if r["class"] == "dob")))
    print("phone countries:", dict(Counter(f"{r['country']}/{'cue' if r['cue'] else 'nocue'}"
                                            for r in c.records if r["class"] == "phone")))  # fmt: skip
    print("card brands:", dict(Counter(r["brand"] for r in c.records if r["class"] == "card")))
    print("clean kinds:", dict(Counter(r["near_miss"] for r in c.records if r["class"] == "clean")))


if __name__ == "__main__":
    main()
