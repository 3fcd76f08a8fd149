"""Every setting, given a value that breaks it, is one line in words: the variable, the problem, the
accepted form; never the validation library's wording, never a secret. The bad values come from the
model itself (each field's type, bounds and ``Form``), so a new setting is walked the day it is added."""

from __future__ import annotations

import typing
from typing import Literal

import pytest
from pydantic import ValidationError

from schemas.setting_errors import _plain, env_name, field_form, mistake_lines
from schemas.settings import Settings

LIBRARY_WORDS = ("Input should", "validation error", "Value error", "type=", "pydantic", "For further")
"""Wording of pydantic's own messages, which a person must never see."""

CONTROL_TEXT = "one\aline"
"""A value no setting accepts (a pasted control character); the bad value of a setting of any text."""


def bad_values(name: str) -> list[str]:
    """Values of setting ``name`` that it refuses, from its own type, bounds and form."""
    field = Settings.model_fields[name]
    form = field_form(name)
    kind = _plain(field.annotation)
    values = [form.bad] if form is not None else []
    if typing.get_origin(kind) is Literal:
        values.append("-".join(("not", *typing.get_args(kind))))
    elif kind is bool:
        values.append("maybe")
    elif kind is int:
        values += ["many", "1.5"]
    elif kind is float or typing.get_args(kind) == (float,):
        values.append("soon")
    for meta in field.metadata:
        for attr, below in (("gt", 0), ("ge", -1)):
            bound = getattr(meta, attr, None)
            if bound is not None:
                values.append(str(bound + below))
        if getattr(meta, "le", None) is not None:
            values.append(str(meta.le + 1))
    return values or [CONTROL_TEXT]


WALK = [(name, value) for name in Settings.model_fields for value in bad_values(name)]
"""(setting, bad value) for every setting of the model."""


def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(env_name(name), raising=False)


def is_secret(name: str) -> bool:
    return "SecretStr" in repr(Settings.model_fields[name].annotation)


@pytest.mark.parametrize(("name", "value"), WALK, ids=[f"{n}={v!r}" for n, v in WALK])
def test_a_bad_value_of_any_setting_is_one_line_naming_it(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean_env(monkeypatch)
    monkeypatch.setenv(env_name(name), value)
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None)
    (line,) = mistake_lines(raised.value)
    assert line.startswith(f"{env_name(name)}: "), line
    assert not any(words in line for words in LIBRARY_WORDS), line
    assert "\n" not in line and "\a" not in line
    if is_secret(name):
        assert value not in line
    if not line.count("must") and not line.count("each"):  # a rule's own message says the form itself
        assert "; accepted: " in line, line


def test_the_walk_covers_every_setting() -> None:
    assert {name for name, _ in WALK} == set(Settings.model_fields)
    assert len(Settings.model_fields) >= 60


def test_every_mistake_at_once_is_a_line_each(monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env(monkeypatch)
    for name in Settings.model_fields:
        monkeypatch.setenv(env_name(name), bad_values(name)[0])
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None)
    lines = mistake_lines(raised.value)
    assert [line.split(":")[0] for line in lines] == [env_name(name) for name in Settings.model_fields]


@pytest.mark.parametrize(
    ("env", "words"),
    [
        (
            {
                "HUMANGATE_TELEGRAM_WEBHOOK_SECRET": "s3cret",
                "HUMANGATE_PUBLIC_URL": "http://humangate.example.org",
            },
            "Telegram only calls https:// URLs: set HUMANGATE_PUBLIC_URL",
        ),
        (
            {"HUMANGATE_OIDC_ISSUER": "https://id.example.org"},
            "HUMANGATE_OIDC_CLIENT_ID, HUMANGATE_OIDC_CLIENT_SECRET",
        ),
        ({"HUMANGATE_MAX_KEPT_BYTES": "5000"}, "HUMANGATE_MAX_KEPT_BYTES must be at least"),
    ],
    ids=["telegram-webhook-needs-https", "oidc-all-or-none", "kept-bytes-fit-a-request"],
)
def test_a_rule_between_settings_is_one_line_naming_them(
    env: dict[str, str], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean_env(monkeypatch)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None)
    (line,) = mistake_lines(raised.value)
    assert words in line and not any(library in line for library in LIBRARY_WORDS), line
