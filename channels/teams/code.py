"""Code on Teams cards: Teams' ``CodeBlock`` with a monospace fallback, and a diff's lines coloured.

Teams' ``CodeBlock`` highlights a fixed set of languages (``CODE_LANGUAGES`` maps fence names to
them; any other is ``PlainText``) and is Teams' own element, so every one carries a ``fallback`` for
other hosts: the code as one monospace run of a ``RichTextBlock`` (a run is never Markdown, so the
code shows exactly as written). A ``diff`` is not one of those languages: a CodeBlock would show it
as one grey run, so its lines are monospace runs coloured ``Good`` (added), ``Attention`` (removed)
and ``Accent`` (hunks and file names).
"""

from __future__ import annotations

from typing import Any

from channels.document.model import Code, diff_kind

Element = dict[str, Any]

CODE_LANGUAGES = {
    "bash": "Bash",
    "sh": "Bash",
    "shell": "Bash",
    "zsh": "Bash",
    "c": "C",
    "cpp": "C++",
    "c++": "C++",
    "csharp": "C#",
    "cs": "C#",
    "c#": "C#",
    "css": "CSS",
    "bat": "DOS",
    "dos": "DOS",
    "go": "Go",
    "golang": "Go",
    "graphql": "GraphQL",
    "html": "HTML",
    "java": "Java",
    "javascript": "JavaScript",
    "js": "JavaScript",
    "json": "JSON",
    "perl": "Perl",
    "php": "PHP",
    "powershell": "PowerShell",
    "ps1": "PowerShell",
    "python": "Python",
    "py": "Python",
    "sql": "SQL",
    "typescript": "TypeScript",
    "ts": "TypeScript",
    "vb": "Visual Basic",
    "vbnet": "Visual Basic",
    "verilog": "Verilog",
    "vhdl": "VHDL",
    "xml": "XML",
}
"""Fence languages and the name of the language Teams' CodeBlock highlights; others are PlainText."""

_DIFF_COLOURS = {"added": "Good", "removed": "Attention", "hunk": "Accent"}


def mono(text: str, **extra: Any) -> Element:
    """Monospace text shown exactly as written (a RichTextBlock's run is never markdown)."""
    run = {"type": "TextRun", "text": text or " ", "fontType": "Monospace", **extra}
    return {"type": "RichTextBlock", "inlines": [run]}


def code_block(block: Code) -> Element:
    language = CODE_LANGUAGES.get(block.language.lower(), "PlainText")
    return {
        "type": "CodeBlock",
        "codeSnippet": block.text,
        "language": language,
        "fallback": mono(block.text),
    }


def diff_lines(block: Code) -> list[Element]:
    lines: list[Element] = []
    for line in block.text.split("\n"):
        colour = _DIFF_COLOURS.get(diff_kind(line))
        # Leading spaces of context lines would be collapsed; no-break spaces keep the columns.
        shown = line[: len(line) - len(line.lstrip(" "))].replace(" ", "\u00a0") + line.lstrip(" ")
        element = mono(shown, **({"color": colour} if colour else {}))
        lines.append(element | {"spacing": "None"} if lines else element)
    return [{"type": "Container", "items": lines}]
