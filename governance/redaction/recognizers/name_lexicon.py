"""Given names and family-name forms of many naming cultures: what makes two capitalised words a person.

The small English NER model knows English names; it misses most Yoruba, Igbo, Hausa, Japanese, Vietnamese,
Brazilian, Indian, Arabic, Slavic and Turkish ones written in plain prose. Two facts decide a name without
the model, for a whole class of names at once:

- ``GIVEN_NAMES``: frequent given names of those cultures (lower case, as written, with and without
  diacritics). Words that are also common English words or product names (``Will``, ``May``, ``Grant``,
  ``Ruby``, ``Rose``) are left out: a name starting with one of them still needs the model or a cue.
- ``FAMILY_FIRST``: family names written first (Vietnamese, Chinese, Korean): ``Nguyễn Thị Mai``,
  ``Zhang Wei``, ``Park Ji-hoon``.
- ``family_shaped``: endings and beginnings that only family names have (``-ović``, ``-ska``, ``-enko``,
  ``-escu``, ``-shvili``, ``-poulos``, ``-moto``, ``Okonkwo``-style Igbo and Yoruba beginnings).
"""

from __future__ import annotations

import re

from governance.redaction.recognizers.base import vocabulary

GIVEN_NAMES = vocabulary(
    # Nigerian: Yoruba, Igbo, Hausa; Ghanaian; East African
    "oluwaseun oluwaseyi oluwatobi olumide olusegun oluwafemi olamide olawale olayinka adebayo adewale adeola "
    "adeyemi ayodele ayodeji babajide babatunde funmilayo funke folake folasade temitope tope tunde yemisi "
    "yetunde kehinde taiwo bukola bolanle damilola femi gbenga kayode segun toyin wale abiodun abimbola "
    "chukwuemeka chukwudi chidi chidinma chiamaka chinedu chinonso chioma chinwe chibuzo emeka ngozi nnamdi "
    "obinna ifeanyi ifeoma ikechukwu uchenna uche nkechi amaka adaeze ebere obiageli kelechi onyekachi "
    "ibrahim musa aminu abdullahi aisha hauwa zainab fatima fatimah usman sani garba bello yusuf kwame kofi "
    "kwabena akosua abena ama yaw kojo kwesi adwoa wanjiru wanjiku kamau otieno achieng njeri mwangi "
    # Japanese
    "haruto hiroshi hiroki hiroto kenji kenta kazuki takeshi takumi yuki yuko yuka yui yuto yuma sota sora "
    "daiki daisuke ren riku kaito shota shohei shinji shigeru satoshi tatsuya tomoko tomoya naoki naomi "
    "akira akiko ayaka ayumi emi haruka hana hinata kaori keiko mai mayumi megumi misaki miyu nana noriko "
    "reiko rin sakura sayaka yoko yoshiko yumiko yusuke kiyoshi makoto masato minoru osamu ryota ryo "
    "taro jiro ichiro koji kohei kenichi shunsuke haruki hikari aoi mei mio airi asuka chihiro "
    # Brazilian / Portuguese
    "joão joao josé jose antônio antonio francisco carlos paulo pedro lucas luiz luis marcos gabriel rafael "
    "daniel marcelo bruno eduardo felipe rodrigo thiago tiago matheus gustavo leonardo guilherme vinícius "
    "vinicius caio henrique otávio otavio maria ana beatriz juliana mariana fernanda patrícia patricia "
    "aline camila larissa letícia leticia gabriela vitória vitoria luana bruna raquel adriana tatiana "
    "conceição conceicao sebastião sebastiao raimundo manoel manuel gonçalo goncalo inês ines joana "
    # Spanish, Italian, French, German, Dutch, Nordic, Polish, Slavic, Greek, Turkish
    "alejandro javier sergio alberto miguel ángel pablo diego andrés andres fernando ricardo jorge enrique "
    "lucía lucia sofía sofia valentina ximena guadalupe alejandra carmen pilar dolores rocío rocio "
    "giuseppe giovanni francesco alessandro matteo lorenzo andrea giulia chiara francesca alessia federica "
    "jean pierre jacques françois francois thierry philippe étienne etienne amélie amelie sylvie "
    "nathalie isabelle mathilde benoît benoit "
    "jürgen jurgen klaus dieter wolfgang helmut günter gunter uwe jörg jorg karl-heinz hans-peter heinz "
    "sabine ursula birgit gudrun renate jutta katrin ilse dagmar jens lars sven björn bjorn astrid ingrid "
    "sigrid annika anneke pieter joris sanne femke bram thijs maarten "
    "małgorzata malgorzata agnieszka katarzyna krzysztof grzegorz wojciech jakub bartosz piotr tomasz "
    "łukasz lukasz michał michal paweł pawel zbigniew jadwiga dorota ewa joanna magdalena "
    "dmitri dmitry sergei sergey vladimir yuri alexei aleksandr mikhail nikolai ivan olga svetlana "
    "natalia ekaterina anastasia oksana taras bohdan volodymyr mykola dragan nikola zoran jelena "
    "dimitrios georgios konstantinos nikolaos eleni panagiotis vasilis "
    "mehmet mustafa ahmet hüseyin huseyin hasan ayşe ayse fatma emine zeynep elif oğuz oguz murat emre "
    # Arabic, Persian, South Asian
    "mohammed muhammad mohammad ahmed ahmad mahmoud khalid omar abdulrahman abdullah hassan hussein tariq "
    "youssef yousef mustafa layla leila noor nour amira yasmin yasmine mariam maryam hamid reza mehdi "
    "parisa shirin arash dariush "
    "priya aarav arjun vivek rahul rohan sanjay vikram anil sunil rajesh ramesh suresh deepak amit "
    "ananya aditi kavya lakshmi meenakshi subramanian venkatesh srinivasan arvind karthik ganesh harish "
    "sneha pooja divya shreya neha anjali sunita kiran ravi manoj nikhil pradeep "
    # Vietnamese, Chinese, Korean given names (written after the family name, or first in Western order)
    "minh anh hương huong linh thảo thao tuấn tuan dũng dung hùng hung quang trang ngọc ngoc "
    "wei fang jing xiaoming xiu ying yan hui lei jun ming jian hao "
    "ji-hoon jihoon min-jun minjun seo-yeon seoyeon ji-woo jiwoo eun-ji eunji hye-jin hyejin sung-min "
    "dong-hyun jae-won "
    # German, English-European given names that are not English words
    "anna lena anne marie sophie lea lukas felix maximilian jonas leon paul emma mia hannah laura julia lisa "
    "sarah katharina johanna friedrich wilhelm hans peter stefan thomas michael andreas christian markus "
    "tobias florian sebastian matthias alexander priyanka harpreet gurpreet manpreet karthikeyan "
    "noriko hiroko yutaka masahiro takashi"
)
FAMILY_FIRST = vocabulary(
    "nguyễn nguyen trần tran lê phạm pham hoàng hoang huỳnh huynh phan vũ vu võ vo đặng dang bùi bui đỗ "
    "hồ ngô ngo dương duong lý "
    "wang zhang liu chen yang huang zhao zhou zhu guo lin gao luo zheng liang xie tang "
    "kim park choi jung jeong kang cho yoon jang lim shin"
)
# What follows a family name written first: a Vietnamese middle name, or a given name (``Nguyễn Văn An``)
VIETNAMESE_MIDDLE = vocabulary("văn van thị thi đức duc hữu huu minh quang ngọc ngoc xuân xuan thanh")
_FAMILY_ENDINGS = re.compile(
    r"(?i)(?:ović|ovic|ević|evic|ić|ski|ska|cki|cka|dzki|wicz|ewicz|enko|chenko|escu|eanu|shvili|idze|"
    r"poulos|opoulou|akis|oglu|oğlu|sson|dottir|dóttir|yan|yev|yeva|ova|ová|ovna|ovich|"
    r"moto|yama|mura|kawa|gawa|shita|hara|zawa|saki|naka|mori|shima|uchi|bayashi|hashi|"
    r"adeyemi|okonkwo|okafor|okeke|okoro|nwosu|nwachukwu|adebayo|adeleke|ogunleye|obi|"
    r"mann|padhyay|opadhyay|swamy|samy|nathan|krishnan|arajan|jee|pande|kulkarni|reddy|raman|vasan|murthy|"
    r"pillai|iyer|iyengar|rajan)$"
)
_NIGERIAN_START = re.compile(r"(?i)^(?:olu|ade|ayo|oye|ogun|oko|onye|nwa|chukwu|eze|ife|ola|oba|obi|ade)")
# What ``family_shaped`` needs somewhere in a text, as trigger regexes: an ending at a letter run's end, or a
# Nigerian start at its beginning
FAMILY_SHAPE_TRIGGERS = (
    _FAMILY_ENDINGS.pattern.removesuffix("$") + r"(?:\P{L}|$)",
    r"(?i)(?:^|\P{L})" + _NIGERIAN_START.pattern.removeprefix("(?i)^"),
)


_PINYIN = re.compile(
    r"(?:(?:zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw])?(?:iang|iong|uang|ang|eng|ing|ong|ian|iao|uan|uai|ai|ei|ui|ao|ou|iu|"
    r"ie|ue|er|an|en|in|un|ua|uo|a|o|e|i|u)){1,3}"
)


def pinyin(word: str) -> bool:
    """Written like a Chinese given name in pinyin, its syllables run together (``Weiming``, ``Jianguo``)."""
    return len(word) <= 12 and _PINYIN.fullmatch(word.lower()) is not None


def family_shaped(word: str) -> bool:
    """A word only family names are shaped like (``Wiśniewska``, ``Kovačević``, ``Fujisawa``, ``Okonkwo``)."""
    w = word.split("-")[-1]
    return len(w) >= 5 and (_FAMILY_ENDINGS.search(w) is not None or _NIGERIAN_START.match(w) is not None)
