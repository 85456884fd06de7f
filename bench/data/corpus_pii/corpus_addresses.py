"""Street addresses in fourteen countries' conventions for the personal-data evaluation corpus.

Each builder returns (full address on one line, the street-and-number part); street names, cities and
postal-code prefixes are hand-written lists, numbers are drawn from the seeded generator.
"""

from __future__ import annotations

import random

# Each builder returns (full address on one line, the street-and-number part, city).

UPPER = "ABDEFGHJLNPQRSTUWXYZ"


def _d(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def addr_us(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Oakridge", "Maple Hollow", "Juniper", "Cedar Bluff", "Willow Creek", "Briarwood",
                         "Magnolia", "Sycamore", "Harborview", "Quail Run", "Chestnut Hill", "Larkspur"])  # fmt: skip
    kind = rng.choice(["Dr", "Ave", "St", "Blvd", "Ln", "Ct", "Rd", "Way"])
    direction = rng.choice(["", "N ", "S ", "E ", "W "])
    city, st, z = rng.choice([("Tulsa", "OK", "741"), ("Boise", "ID", "837"), ("Dayton", "OH", "454"),
                              ("Tacoma", "WA", "984"), ("Knoxville", "TN", "379"), ("Fresno", "CA", "937"),
                              ("Madison", "WI", "537"), ("Albany", "NY", "122")])  # fmt: skip
    unit = rng.choice(
        ["", "", f", Apt {rng.randint(1, 19)}{rng.choice('ABCD')}", f", Suite {rng.randint(100, 450)}"]
    )
    line = f"{rng.randint(12, 9876)} {direction}{street} {kind}"
    return f"{line}{unit}, {city}, {st} {z}{_d(rng, 2)}", line


def addr_uk(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Kingsley Road", "Ashgrove Avenue", "Beechwood Close", "Sandringham Drive",
                         "Harcourt Terrace", "Elmfield Crescent", "Victoria Mews", "Thornbury Gardens"])  # fmt: skip
    town, pc = rng.choice([("Leeds", "LS6"), ("Bristol", "BS7"), ("Manchester", "M20"), ("Cardiff", "CF24"),
                           ("Norwich", "NR2"), ("Edinburgh", "EH9"), ("London", "SE15"), ("Nottingham", "NG7")])  # fmt: skip
    line = f"{rng.randint(2, 220)} {street}"
    flat = rng.choice(["", f"Flat {rng.randint(1, 12)}, "])
    post = f"{pc} {rng.randint(1, 9)}{rng.choice(UPPER)}{rng.choice(UPPER)}"
    return f"{flat}{line}, {town} {post}", line


def addr_pl(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["ul. Słowackiego", "ul. Kościuszki", "ul. Mickiewicza", "al. Niepodległości",
                         "ul. Wrocławska", "ul. Ogrodowa", "ul. Długa", "ul. Jagiellońska"])  # fmt: skip
    city, pc = rng.choice([("Kraków", "31"), ("Warszawa", "02"), ("Gdańsk", "80"), ("Poznań", "60"),
                           ("Wrocław", "50"), ("Lublin", "20"), ("Szczecin", "70")])  # fmt: skip
    line = f"{street} {rng.randint(3, 180)}/{rng.randint(1, 60)}"
    return f"{line}, {pc}-{_d(rng, 3)} {city}", line


def addr_br(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Rua Visconde de Pirajá", "Avenida Sete de Setembro", "Rua Augusta", "Rua dos Andradas",
                         "Avenida Afonso Pena", "Rua Padre Chagas", "Rua XV de Novembro", "Travessa do Comércio"])  # fmt: skip
    city, uf, cep = rng.choice([("Salvador", "BA", "40"), ("São Paulo", "SP", "01"), ("Porto Alegre", "RS", "90"),
                                ("Belo Horizonte", "MG", "30"), ("Curitiba", "PR", "80"), ("Recife", "PE", "50")])  # fmt: skip
    line = f"{street}, {rng.randint(10, 2400)}"
    apto = rng.choice(
        [f", apto {rng.randint(11, 1204)}", f", casa {rng.randint(1, 4)}", f", sala {rng.randint(101, 1510)}"]
    )
    return f"{line}{apto}, {city} - {uf}, {cep}{_d(rng, 3)}-{_d(rng, 3)}", line


def addr_fr(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["rue de la Roquette", "boulevard Voltaire", "avenue Jean Jaurès", "rue Oberkampf",
                         "rue du Faubourg Saint-Denis", "quai de la Fosse", "allée des Tilleuls", "rue Nationale"])  # fmt: skip
    city, cp = rng.choice([("Paris", f"750{rng.randint(1, 20):02d}"), ("Lyon", f"6900{rng.randint(1, 9)}"),
                           ("Nantes", "44000"), ("Bordeaux", "33000"), ("Lille", "59000"), ("Toulouse", "31000")])  # fmt: skip
    line = f"{rng.randint(2, 140)}{rng.choice(['', '', ' bis', ' ter'])} {street}"
    return f"{line}, {cp} {city}", line


def addr_de(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Lindenstraße", "Schillerstraße", "Am Sonnenhang", "Goethestraße", "Kastanienallee",
                         "Uhlandstraße", "Mühlenweg", "Gartenstraße"])  # fmt: skip
    city, plz = rng.choice([("Leipzig", "04"), ("Freiburg im Breisgau", "79"), ("Hamburg", "22"), ("München", "80"),
                            ("Köln", "50"), ("Dresden", "01"), ("Stuttgart", "70")])  # fmt: skip
    line = f"{street} {rng.randint(1, 98)}{rng.choice(['', '', 'a', 'b', 'c'])}"
    return f"{line}, {plz}{_d(rng, 3)} {city}", line


def addr_jp(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        area, ward, city, pc = rng.choice([("Minami-Aoyama", "Minato-ku", "Tokyo", "107"), ("Tenjin", "Chuo-ku", "Fukuoka", "810"),
                                           ("Umeda", "Kita-ku", "Osaka", "530"), ("Sakae", "Naka-ku", "Nagoya", "460"),
                                           ("Koenji-Minami", "Suginami-ku", "Tokyo", "166"), ("Karasuma", "Shimogyo-ku", "Kyoto", "600")])  # fmt: skip
        line = f"{area} {rng.randint(1, 6)}-{rng.randint(1, 30)}-{rng.randint(1, 20)}"
        return f"{line}, {ward}, {city} {pc}-{_d(rng, 4)}", line
    pref, city, area = rng.choice([("東京都", "渋谷区", "神宮前"), ("大阪府", "大阪市北区", "中崎"), ("神奈川県", "横浜市中区", "山下町"),
                                   ("福岡県", "福岡市中央区", "大名"), ("京都府", "京都市左京区", "北白川"), ("北海道", "札幌市中央区", "南三条西")])  # fmt: skip
    line = f"{area}{rng.randint(1, 6)}-{rng.randint(1, 30)}-{rng.randint(1, 20)}"
    return f"{pref}{city}{line}", line


def addr_es(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Calle de Alcalá", "Calle Mayor", "Avenida de la Constitución", "Calle de Serrano",
                         "Carrer de Mallorca", "Calle Larios", "Calle San Fernando", "Calle del Pez"])  # fmt: skip
    city, cp = rng.choice([("Madrid", "28"), ("Barcelona", "08"), ("Sevilla", "41"), ("Valencia", "46"),
                           ("Málaga", "29"), ("Bilbao", "48")])  # fmt: skip
    line = f"{street} {rng.randint(2, 260)}"
    piso = rng.choice(
        ["", f", {rng.randint(1, 8)}º {rng.choice('ABCD')}", f", {rng.randint(1, 6)}º {rng.randint(1, 4)}ª"]
    )
    return f"{line}{piso}, {cp}{_d(rng, 3)} {city}", line


def addr_it(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Via Garibaldi", "Corso Vittorio Emanuele II", "Via dei Mille", "Viale Monza",
                         "Via Nazionale", "Piazza Cavour", "Via San Gregorio Armeno", "Via Mazzini"])  # fmt: skip
    city, prov, cap = rng.choice([("Torino", "TO", "101"), ("Milano", "MI", "201"), ("Napoli", "NA", "801"),
                                  ("Bologna", "BO", "401"), ("Firenze", "FI", "501"), ("Roma", "RM", "001")])  # fmt: skip
    line = f"{street} {rng.randint(1, 190)}"
    return f"{line}, {cap}{_d(rng, 2)} {city} {prov}", line


def addr_nl(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Keizersgracht", "Oudegracht", "Lange Voorhout", "Witte de Withstraat",
                         "Nieuwe Binnenweg", "Vondelstraat", "Breestraat", "Lijnbaansgracht"])  # fmt: skip
    city, pc = rng.choice([("Amsterdam", "10"), ("Utrecht", "35"), ("Den Haag", "25"), ("Rotterdam", "30"),
                           ("Leiden", "23"), ("Haarlem", "20")])  # fmt: skip
    line = f"{street} {rng.randint(3, 420)}{rng.choice(['', '', '-II', ' A', '-huis'])}"
    return f"{line}, {pc}{_d(rng, 2)} {rng.choice(UPPER)}{rng.choice(UPPER)} {city}", line


def addr_in(rng: random.Random) -> tuple[str, str]:
    bldg = rng.choice(["Sai Krupa Apartments", "Green Glen Residency", "Shanti Niketan Society", "Lotus Enclave",
                       "Prestige Palms", "Ganga Vihar"])  # fmt: skip
    road = rng.choice(
        ["12th Main Road", "4th Cross", "Road No. 10", "Link Road", "Anna Salai Extension", "Ring Road"]
    )
    area, city, pin = rng.choice([("Indiranagar", "Bengaluru", "5600"), ("Koramangala", "Bengaluru", "5600"),
                                  ("Banjara Hills", "Hyderabad", "5000"), ("Andheri West", "Mumbai", "4000"),
                                  ("T. Nagar", "Chennai", "6000"), ("Vasant Kunj", "New Delhi", "1100")])  # fmt: skip
    line = f"Flat {rng.randint(101, 1204)}, {bldg}, {road}"
    return f"{line}, {area}, {city} {pin}{_d(rng, 2)}", line


def addr_ng(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Adeola Odeku Street", "Awolowo Road", "Allen Avenue", "Ogui Road", "Aminu Kano Crescent",
                         "Herbert Macaulay Way", "Bode Thomas Street", "Ahmadu Bello Way"])  # fmt: skip
    area, city = rng.choice([("Victoria Island", "Lagos"), ("Ikoyi", "Lagos"), ("Ikeja", "Lagos"), ("Wuse II", "Abuja"),
                             ("Surulere", "Lagos"), ("GRA", "Enugu"), ("Bodija", "Ibadan")])  # fmt: skip
    line = f"{rng.choice(['No. ', 'Plot ', ''])}{rng.randint(2, 1400)} {street}"
    return f"{line}, {area}, {city}", line


def addr_au(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Glenferrie Road", "Wattle Grove", "Brunswick Street", "Coronation Drive", "Hay Street",
                         "Jacaranda Avenue", "Banksia Close", "Beach Road"])  # fmt: skip
    sub, st, pc = rng.choice([("Bondi", "NSW", "2026"), ("Carlton", "VIC", "3053"), ("Fitzroy", "VIC", "3065"),
                              ("Toowong", "QLD", "4066"), ("Subiaco", "WA", "6008"), ("Glenelg", "SA", "5045")])  # fmt: skip
    unit = rng.choice(["", f"Unit {rng.randint(1, 30)}/", f"{rng.randint(1, 12)}/"])
    line = f"{unit}{rng.randint(2, 480)} {street}"
    return f"{line}, {sub} {st} {pc}", line


def addr_ca(rng: random.Random) -> tuple[str, str]:
    street = rng.choice(["Elm Crescent", "rue Sherbrooke Est", "Queen Street West", "Jasper Avenue", "Robson Street",
                         "Spring Garden Road", "boulevard René-Lévesque Ouest", "Lakeshore Road"])  # fmt: skip
    city, prov, fsa = rng.choice([("Toronto", "ON", "M5V"), ("Montréal", "QC", "H2L"), ("Edmonton", "AB", "T5J"),
                                  ("Vancouver", "BC", "V6E"), ("Halifax", "NS", "B3J"), ("Oakville", "ON", "L6J")])  # fmt: skip
    ldu = f"{rng.randint(1, 9)}{rng.choice('ABCEGHJKLMNPRSTVXY')}{rng.randint(0, 9)}"
    line = f"{rng.randint(10, 3999)} {street}"
    apt = rng.choice(["", f", Apt {rng.randint(101, 2210)}", f", unit {rng.randint(1, 40)}"])
    return f"{line}{apt}, {city} {prov} {fsa} {ldu}", line


ADDRESS_BUILDERS = {
    "US": (addr_us, "en", "shipping_address"), "GB": (addr_uk, "en", "address"), "PL": (addr_pl, "pl", "adres"),
    "BR": (addr_br, "pt", "endereço"), "FR": (addr_fr, "fr", "adresse"), "DE": (addr_de, "de", "Anschrift"),
    "JP": (addr_jp, "ja", "住所"), "ES": (addr_es, "es", "dirección"), "IT": (addr_it, "it", "indirizzo"),
    "NL": (addr_nl, "nl", "adres"), "IN": (addr_in, "en", "addr"), "NG": (addr_ng, "en", "street"),
    "AU": (addr_au, "en", "delivery_address"), "CA": (addr_ca, "en", "mailing_address"),
}  # fmt: skip

ADDRESS_PROSE = {
    "en": ["Please ship the replacement to {a} instead of the old place.",
           "I moved last month, my new address is {a} - can you update the account?",
           "Deliver to: {a}. Leave it with the neighbour if nobody answers."],
    "pl": ["Proszę wysłać paczkę na adres: {a}.", "Mój nowy adres to {a}, proszę zaktualizować dane."],
    "pt": ["Meu endereço é {a}, pode mandar a nota fiscal para lá?", "Entregar em: {a}."],
    "fr": ["Mon adresse : {a}. Merci de corriger la facture.", "Livraison au {a}, code porte 4821."],
    "de": ["Meine Anschrift lautet {a}, bitte die Rechnung dorthin schicken.", "Lieferung an: {a}"],
    "ja": ["住所は{a}です。よろしくお願いします。", "Please send it to {a}, thanks."],
    "es": ["Mi dirección es {a}, por favor envíen el pedido allí.", "Enviar a: {a}."],
    "it": ["Il mio indirizzo è {a}, grazie.", "Spedire a: {a}"],
    "nl": ["Mijn adres is {a}, kunt u het pakket daarheen sturen?", "Bezorgadres: {a}"],
}  # fmt: skip
