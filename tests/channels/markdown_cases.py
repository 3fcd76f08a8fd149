"""The inputs every surface's renderer is tested with (docs/rendering.md): one rich request, and one
table of hostile messages that each surface's test runs (parametrized, never copied).

Each hostile case names what a person must still see (``visible``: nothing dropped) and the hosts a
link's label must be shown with (``hosts``). Every surface's test also checks its own safety rules on
every case: only http, https and mailto links, no mention or broadcast that notifies anyone, no markup
of the agent's that the platform would act on.
"""

from __future__ import annotations

from dataclasses import dataclass

RICH = """## Deploy **v2.1** to *prod*

The plan, as agreed in the [runbook](https://wiki.example.com/runbook):

- stop the `payments` workers
- run the migration
  1. take a snapshot
  2. apply `0042_add_index`
- ~~restart the cache~~ (not needed)

> Rollback is one command.

```sql
SELECT count(*) FROM orders WHERE status = 'open';
```

```diff
--- a/config.yaml
+++ b/config.yaml
@@ -1,2 +1,2 @@
-replicas: 2
+replicas: 4
 region: eu-west-1
```

| service | cost | owner |
| :-- | --: | --- |
| payments | $120 | Ada |
| search | $80 | Bo |

---
Questions: <ops@example.com>"""
"""A deploy plan with every construct §18 lists: heading, bold, italic, strike, code, a list with a
nested numbered list, a quote, a code block with its language, a diff, a table and a rule."""

RICH_WORDS = (
    "Deploy",
    "v2.1",
    "runbook",
    "payments",
    "take a snapshot",
    "0042_add_index",
    "restart the cache",
    "Rollback is one command.",
    "SELECT count(*) FROM orders",
    "replicas: 4",
    "replicas: 2",
    "search",
    "$120",
    "ops@example.com",
)
"""Words of ``RICH`` every surface shows."""


@dataclass(frozen=True, slots=True)
class Hostile:
    name: str
    text: str
    visible: tuple[str, ...] = ()
    """Text a person must still see, as written."""
    hosts: tuple[str, ...] = ()
    """Hosts shown beside a link's label (the label differs from the address)."""


HOSTILE: tuple[Hostile, ...] = (
    Hostile("javascript link", "[click me](javascript:alert(1))", visible=("click me",)),
    Hostile("data link", "[open](data:text/html;base64,PHNjcmlwdD4=)", visible=("open",)),
    Hostile("vbscript and file links", "[a](vbscript:msgbox) [b](file:///etc/passwd)", visible=("a", "b")),
    Hostile("other schemes", "[chat](slack://open) [call](tel:+15550100) [tg](tg://resolve?domain=x)"),
    Hostile("relative link", "[home](/admin/delete)", visible=("home",)),
    Hostile("autolink javascript", "<javascript:alert(1)>", visible=("javascript:alert(1)",)),
    Hostile("raw script", "<script>alert(1)</script>", visible=("<script>alert(1)</script>",)),
    Hostile("img onerror", '<img src=x onerror="alert(1)">', visible=("onerror",)),
    Hostile("html block", "<div onclick=alert(1)>\n\n**hi**\n\n</div>", visible=("onclick",)),
    Hostile("iframe in table", "| a |\n|---|\n| <iframe src=https://evil.example> |", visible=("iframe",)),
    Hostile("everyone", "@everyone and @here, look", visible=("@everyone", "@here")),
    Hostile("slack broadcasts", "<!channel> <!here> <!everyone>", visible=("<!channel>", "<!here>")),
    Hostile("slack people", "<@U024BE7LH> <#C024BE7LR> <!subteam^S0614TZR7>", visible=("<@U024BE7LH>",)),
    Hostile("slack link syntax", "<https://evil.example|https://good.example>", visible=("evil.example",)),
    Hostile(
        "discord people", "<@&123456789012> <@123456789012> <#123456789012>", visible=("<@&123456789012>",)
    ),
    Hostile("telegram mention", "ping @durov now", visible=("@durov",)),
    Hostile("teams mention", "<at>Everyone</at> please", visible=("<at>Everyone</at>",)),
    Hostile(
        "second masked link",
        "[docs](https://docs.example.com) then [the same docs](https://evil.example/login)",
        visible=("docs", "the same docs"),
        hosts=("docs.example.com", "evil.example"),
    ),
    Hostile(
        "label that is an address",
        "[https://good.example](https://evil.example)",
        visible=("https://good.example",),
        hosts=("evil.example",),
    ),
    Hostile("image", "![diagram](https://img.example/a.png)", visible=("diagram",), hosts=("img.example",)),
    Hostile("markup in code", "`<b>**x**</b> @everyone`", visible=("<b>**x**</b>",)),
    Hostile("html entities", "&lt;b&gt; &amp; &#60;script&#62;", visible=("<b>", "&")),
    Hostile("right to left override", "approve \u202egnp.exe", visible=("approve",)),
    Hostile("nested quotes", "> " * 5000 + "deep inside", visible=("deep inside",)),
    Hostile("nested lists", "- " * 3000 + "deep item", visible=("deep item",)),
    Hostile("open brackets", "[" * 30000, visible=("[[[[",)),
    Hostile("image openers", "![" * 15000, visible=("![![",)),
    Hostile("open links", "[a](" * 8000, visible=("[a](",)),
    Hostile("emphasis runs", "**a " * 8000, visible=("a",)),
    Hostile("backticks", "`a" * 15000, visible=("a",)),
)
"""Messages an agent might send to hurt people or the renderer."""

HOSTILE_IDS = [case.name for case in HOSTILE]

SAFE_SCHEMES = ("http://", "https://", "mailto:")
"""The only link addresses any surface may carry from an agent's text."""


def is_safe_href(href: str) -> bool:
    """Whether a link address is one a surface may carry."""
    return href.lower().startswith(SAFE_SCHEMES)
