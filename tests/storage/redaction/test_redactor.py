"""Placeholders, scopes, toggles, custom rules and the settings that drive them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from storage.kernel.settings import RedactionSettings, Settings
from storage.redaction import RedactionPolicy

EVERYTHING = (
    "Alice <alice@example.com>, +49 30 12345678, card 4111 1111 1111 1111, "
    "IBAN DE89 3704 0044 0532 0130 00, host 192.168.1.20, 221B Baker Street."
)


def redact(text: str, settings: RedactionSettings | None = None) -> str:
    return RedactionPolicy.from_settings(settings).redactor().redact(text)


def test_every_category_gets_its_typed_placeholder() -> None:
    assert redact(EVERYTHING) == (
        "Alice <<EMAIL_1>>, <PHONE_1>, card <CARD_1>, IBAN <IBAN_1>, host <IP_1>, <ADDRESS_1>."
    )


def test_same_value_same_placeholder_within_one_scope_across_texts() -> None:
    redactor = RedactionPolicy.from_settings(None).redactor()
    first = redactor.redact("Mail alice@example.com or bob@example.com; call 030 12345678.")
    second = redactor.redact("Again: ALICE@example.com, and +49 30 12345678, carol@example.com")
    assert first == "Mail <EMAIL_1> or <EMAIL_2>; call <PHONE_1>."
    assert second == "Again: <EMAIL_1>, and <PHONE_1>, <EMAIL_3>"
    assert redactor.counts == {"email": 4, "phone": 2}
    # A new scope starts again at 1: numbering says nothing across sessions.
    assert redact("carol@example.com") == "<EMAIL_1>"


def test_restore_puts_back_only_this_scopes_placeholders() -> None:
    redactor = RedactionPolicy.from_settings(None).redactor()
    redactor.redact("Write to alice@example.com.")
    answer = {"facts": ["Alice's address is <EMAIL_1>.", "<EMAIL_7> and <PHONE_1> stay."]}
    assert redactor.restore_all(answer) == {
        "facts": ["Alice's address is alice@example.com.", "<EMAIL_7> and <PHONE_1> stay."]
    }


def test_placeholders_already_in_the_text_are_not_reused() -> None:
    redactor = RedactionPolicy.from_settings(None).redactor()
    out = redactor.redact("Stored as <EMAIL_1>; new one bob@example.com")
    assert out == "Stored as <EMAIL_1>; new one <EMAIL_2>"
    assert redactor.restore(out) == "Stored as <EMAIL_1>; new one bob@example.com"


@pytest.mark.parametrize(
    ("toggle", "kept"),
    [
        ("emails", "alice@example.com"),
        ("phones", "+49 30 12345678"),
        ("cards", "4111 1111 1111 1111"),
        ("ibans", "DE89 3704 0044 0532 0130 00"),
        ("ips", "192.168.1.20"),
        ("addresses", "221B Baker Street"),
    ],
)
def test_each_category_can_be_turned_off(toggle: str, kept: str) -> None:
    out = redact(EVERYTHING, RedactionSettings(**{toggle: False}))
    assert kept in out
    assert out.count("<") == 6 - 1 + 1  # the other five placeholders, and "Alice <"


def test_disabled_changes_nothing() -> None:
    policy = RedactionPolicy.from_settings(RedactionSettings(enabled=False))
    assert not policy.active and policy.redactor().redact(EVERYTHING) == EVERYTHING


def test_custom_rules_come_first_and_name_their_placeholder() -> None:
    settings = RedactionSettings(custom=["TICKET=TCK-[0-9]{6}", "EMPLOYEE=\\bE\\d{5}\\b"])
    redactor = RedactionPolicy.from_settings(settings).redactor()
    out = redactor.redact("TCK-123456 for E12345, TCK-123456 again; mail a@example.com")
    assert out == "<TICKET_1> for <EMPLOYEE_1>, <TICKET_1> again; mail <EMAIL_1>"
    assert redactor.counts == {"ticket": 2, "employee": 1, "email": 1}


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (["ticket=TCK"], "custom rule 1 is not NAME=regex"),
        (["OK=a", "SECRET=(unclosed"], "custom rule SECRET: bad regex (missing ), unterminated"),
    ],
)
def test_bad_custom_rules_fail_validation_without_echoing_the_pattern(
    rules: list[str], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        RedactionSettings(custom=rules)
    assert message in str(caught.value)
    assert "(unclosed" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Ruf mich an: 030 12345678, Hauptstraße 5, 10115 Berlin.",
            "Ruf mich an: <PHONE_1>, <ADDRESS_1>.",
        ),
        ("Appelez le 06 12 34 56 78 au 12 rue de la Paix.", "Appelez le <PHONE_1> au <ADDRESS_1>."),
        ("Llámame al 612 34 56 78, Calle Mayor 5.", "Llámame al <PHONE_1>, <ADDRESS_1>."),
    ],
)
def test_german_french_and_spanish_formats(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_phone_regions_decide_which_national_formats_count() -> None:
    french = "Appelez le 01 23 45 67 89."
    assert redact(french, RedactionSettings(phone_regions=["US"])) == french
    assert redact("Call +33 1 23 45 67 89", RedactionSettings(phone_regions=["US"])) == (
        "Call <PHONE_1>"
    )


def test_settings_come_from_the_environment_and_the_policy_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[redaction]\nbefore_storage = true\ncustom = ["CASE=CASE-\\\\d+"]\n')
    monkeypatch.setenv("ARCHIVIST_POLICY_FILE", str(policy))
    monkeypatch.setenv("ARCHIVIST_REDACTION__PHONES", "false")
    settings = Settings().redaction
    assert settings.before_storage and not settings.phones and settings.enabled
    assert redact("CASE-42 at +49 30 12345678", settings) == "<CASE_1> at +49 30 12345678"


@pytest.mark.parametrize(
    "text",
    [
        "memory-sync-daily failed as of 2026-11-20 23:30:00 UTC",
        "the run of 2026-11-20T23:30:00+01:00 and of 20.11.2026 23:30",
        "due 11/20/2026 09:15, moved to 2026/11/21 10:00:00.250",
    ],
)
def test_dates_and_times_of_day_are_not_phone_numbers(text: str) -> None:
    assert redact(text) == text


def test_a_phone_number_beside_a_date_is_still_found() -> None:
    out = redact("On 2026-11-20 23:30 call +49 30 12345678 about it.")
    assert out == "On 2026-11-20 23:30 call <PHONE_1> about it."
