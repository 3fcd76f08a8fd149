"""Whether the settings can run humangate at all, said before any command starts.

A value that is not of its setting's form (``schemas.setting_errors``) and a rule between settings
(a mode that needs an https public URL; a channel half configured) are mistakes: every command
prints each as one line on stderr and exits 2, without a traceback (docs/cli.md#settings-mistakes).
``doctor`` shows a half-configured channel as one of its failed checks instead.
"""

from __future__ import annotations

from pydantic import ValidationError

from schemas.setting_errors import mistake_lines
from schemas.settings import Settings, get_settings


class SettingsMistakes(Exception):
    """The settings cannot be used; ``lines`` says why, one mistake a line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


def read_settings() -> Settings:
    """The process's settings (``get_settings``), or ``SettingsMistakes`` naming every mistake."""
    try:
        return get_settings()
    except ValidationError as exc:
        raise SettingsMistakes(mistake_lines(exc)) from None


def half_configured(settings: Settings) -> dict[str, str]:
    """A line for each channel with some but not all of its required settings, by channel name:
    which are set, which are still needed, and the two ways out."""
    from channels.registry import CHANNELS  # here: commands that read only the settings stay quick

    unset = Settings.model_construct()
    lines = {}
    for name, channel in CHANNELS.items():
        missing = channel.missing_settings(settings)
        wanted = channel.missing_settings(unset)
        given = [variable for variable in wanted if variable not in missing]
        if missing and given:
            lines[name] = (
                f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} set, but {channel.title} also needs"
                f" {' and '.join(missing)}: set {'it' if len(missing) == 1 else 'them'} too, or unset"
                f" {', '.join(given)} to leave {name} off"
            )
    return lines


def checked_settings() -> Settings:
    """``read_settings``, also refusing a half-configured channel (``SettingsMistakes``)."""
    settings = read_settings()
    lines = half_configured(settings)
    if lines:
        raise SettingsMistakes(list(lines.values()))
    return settings
