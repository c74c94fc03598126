"""The words of time in the languages the question reader knows: units, months, seasons,
weekdays and numbers written out (``storage.retrieval._timeframe`` reads them)."""

from __future__ import annotations

UNITS = {
    "day": "day", "days": "day", "tag": "day", "tage": "day", "tagen": "day",
    "día": "day", "días": "day", "dia": "day", "dias": "day", "日": "day", "日間": "day",
    "week": "week", "weeks": "week", "woche": "week", "wochen": "week",
    "semana": "week", "semanas": "week", "週": "week", "週間": "week",
    "month": "month", "months": "month", "monat": "month", "monate": "month",
    "monaten": "month", "mes": "month", "meses": "month", "月": "month", "か月": "month",
    "ヶ月": "month", "カ月": "month", "ケ月": "month",
    "year": "year", "years": "year", "jahr": "year", "jahre": "year", "jahren": "year",
    "año": "year", "años": "year", "年": "year", "年間": "year",
}  # fmt: skip
_MONTH_NAMES = (
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"),
    ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september",
     "oktober", "november", "dezember"),
    ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre",
     "octubre", "noviembre", "diciembre"),
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
)  # fmt: skip
MONTHS = {name: n for names in _MONTH_NAMES for n, name in enumerate(names, start=1)}
MONTHS["sept"] = 9
# Meteorological seasons of the northern hemisphere: their first month (three months each).
SEASONS = {
    "spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12,
    "frühling": 3, "frühjahr": 3, "sommer": 6, "herbst": 9,
    "primavera": 3, "verano": 6, "otoño": 9, "invierno": 12,
    "春": 3, "夏": 6, "秋": 9, "冬": 12,
}  # fmt: skip
WEEKDAYS = {
    **{d: n for n, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday",
       "saturday", "sunday"))},
    **{d: n for n, d in enumerate(("montag", "dienstag", "mittwoch", "donnerstag", "freitag",
       "samstag", "sonntag"))},
    **{d: n for n, d in enumerate(("lunes", "martes", "miércoles", "jueves", "viernes",
       "sábado", "domingo"))},
    **{d: n for n, d in enumerate("月火水木金土日")},
    "sonnabend": 5, "miercoles": 2, "sabado": 5,
}  # fmt: skip
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "couple of": 2, "few": 3,
    "ein": 1, "einem": 1, "einer": 1, "eine": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5,
    "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "zwölf": 12,
    "un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
    "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "doce": 12,
    "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
}  # fmt: skip
SPANS = {"day": 1, "week": 7, "month": 30, "year": 365}  # days, for "N units ago"
