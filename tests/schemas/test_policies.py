"""Reading a policy file (docs/policies.md#the-file): what a valid file gives, and every mistake of an
invalid one named by its line and field."""

from __future__ import annotations

import pytest

from schemas.policies import Mistake, Policy, PolicyFileError, parse_policies

EXAMPLE = """\
[policies.deploys]
callers   = ["deploy-bot"]          # key names; "anonymous"; "*" any
timeout   = 900
channels  = ["slack", "teams", "web"]
approvers = ["slack:U012AB3CD", "slack:group:S0DEPLOY", "discord:user:81234", "discord:role:99123",
             "teams:6f2c3a1e-8b4d-4c2a-9e1f-0a1b2c3d4e5f", "email:alice@example.com", "operator:alice"]
[policies.deploys.targets]
slack = "C0DEPLOYS"
teams = "19:deploys@thread.tacv2"

[policies.anyone]
callers = ["anonymous"]
rate_limit = 5
max_pending = 2

[policies.rest]
targets = { discord = "1234567890" }
"""


def mistakes(text: str) -> list[Mistake]:
    with pytest.raises(PolicyFileError) as raised:
        parse_policies(text, "humangate.toml")
    assert str(raised.value).startswith(f"humangate.toml has {len(raised.value.mistakes)} mistake(s):")
    return raised.value.mistakes


def test_the_example_gives_each_policy_in_file_order() -> None:
    policies = parse_policies(EXAMPLE)
    assert policies.names == ["deploys", "anyone", "rest"]
    deploys = policies.policies[0]
    assert deploys.callers == ["deploy-bot"] and deploys.timeout == 900
    assert deploys.channels == ["slack", "teams", "web"]
    assert deploys.approvers[1] == "slack:group:S0DEPLOY" and len(deploys.approvers) == 7
    assert deploys.targets.items() == [("slack", "C0DEPLOYS"), ("teams", "19:deploys@thread.tacv2")]
    assert deploys.targets.of("web") is None and deploys.targets.of("discord") is None
    assert (policies.policies[1].rate_limit, policies.policies[1].max_pending) == (5, 2)
    assert policies.policies[2].targets.of("discord") == "1234567890"


def test_the_first_matching_policy_applies() -> None:
    policies = parse_policies(EXAMPLE)
    first = policies.first_for
    assert first("deploy-bot", True) is policies.policies[0]
    assert first("someone", False) is policies.policies[1]  # anonymous callers
    assert first("other-bot", True) is policies.policies[2]  # no callers: every caller
    assert parse_policies('[policies.a]\ncallers = ["x"]').first_for("y", True) is None
    assert parse_policies('[policies.a]\ncallers = ["*"]').first_for("y", False) is not None


def test_an_empty_file_has_no_policies() -> None:
    assert parse_policies("# nothing yet\n").policies == ()


def test_a_syntax_error_is_named_by_its_line() -> None:
    assert mistakes('[policies.deploys]\ncallers = ["a"]\ntimeout = \n') == [
        Mistake(3, "", "not valid TOML: Invalid value")
    ]


def test_every_mistake_is_named_by_its_line_and_field() -> None:
    text = """\
[policies.deploys]
callers   = ["deploy bot", "*"]
timeout   = -1
timout    = 3
channels  = ["slack", "sms"]
approvers = ["slack:U012AB3CD",
             "slack:C0DEPLOYS"]
[policies.deploys.targets]
slack = "#deploys"
web = "x"

[policies."with space"]
timeout = "900"
rate_limit = 1.5

[extra]
"""
    found = [(m.line, m.field, m.rule) for m in mistakes(text)]
    assert found == [
        (
            2,
            "policies.deploys.callers[0]",
            "'deploy bot' is not a key name (use 1-64 letters, digits, '-' or '_'), 'anonymous' or '*'",
        ),
        (3, "policies.deploys.timeout", "must be greater than 0"),
        (
            4,
            "policies.deploys.timout",
            "is not a policy setting; the settings are callers, timeout, channels, approvers, targets, "
            "rate_limit, max_pending, approvals, order, on_timeout, remind, steps, tools",
        ),
        (
            5,
            "policies.deploys.channels[1]",
            "'sms' is not a channel; the channels are slack, discord, teams, web, telegram, email",
        ),
        (
            7,
            "policies.deploys.approvers[1]",
            "'slack:C0DEPLOYS' is not an approver; the forms are slack:U012AB3CD, slack:group:S0DEPLOY, "
            "discord:user:81234, discord:role:99123, teams:<aadObjectId>, telegram:123456789, "
            "email:alice@example.com, operator:alice",
        ),
        (
            9,
            "policies.deploys.targets.slack",
            "'#deploys' is not a channel id (like C0123ABCD) or a user id (like U0123ABCD)",
        ),
        (
            10,
            "policies.deploys.targets.web",
            "is not a channel with a target; targets are set for slack, discord, teams, telegram, email",
        ),
        (12, "policies.with space", "a policy name must use 1-64 letters, digits, '-' or '_'"),
        (13, "policies.with space.timeout", "must be a number (got a string)"),
        (14, "policies.with space.rate_limit", "must be a whole number (got a number)"),
        (16, "extra", "a policy file holds only [policies.<name>] and [[webhooks]] tables"),
    ]


def test_a_target_outside_the_policys_channels_is_a_mistake() -> None:
    text = '[policies.a]\nchannels = ["slack"]\n\n[policies.a.targets]\ndiscord = "123"\n'
    assert mistakes(text) == [
        Mistake(5, "policies.a.targets.discord", "discord is not in this policy's channels (slack)")
    ]


@pytest.mark.parametrize(
    ("line", "field", "rule"),
    [
        ("callers = []", "policies.a.callers", "must name at least one (or be left out)"),
        ('callers = ["a", "a"]', "policies.a.callers", "names a more than once"),
        ('callers = "a"', "policies.a.callers", "must be a list (got a string)"),
        ('channels = ["web", "web"]', "policies.a.channels", "names web more than once"),
        ("targets = 3", "policies.a.targets", "must be a table (got a whole number)"),
        (
            'targets = { discord = "#general" }',
            "policies.a.targets.discord",
            "'#general' is not a channel id (digits, like 1234567890123456789)",
        ),
        ("max_pending = 0", "policies.a.max_pending", "must be greater than 0"),
        ("timeout = true", "policies.a.timeout", "must be a number (got a boolean)"),
    ],
)
def test_each_rule_names_its_field(line: str, field: str, rule: str) -> None:
    assert mistakes(f"[policies.a]\n{line}\n") == [Mistake(2, field, rule)]


@pytest.mark.parametrize(
    "approver",
    [
        "slack:U012AB3CD",
        "slack:W012AB3CD",
        "slack:group:S0DEPLOY",
        "discord:user:81234",
        "discord:role:99123",
        "teams:6f2c3a1e-8b4d-4c2a-9e1f-0a1b2c3d4e5f",
        "email:alice@example.com",
        "operator:alice",
    ],
)
def test_every_approver_form_is_read(approver: str) -> None:
    policy = parse_policies(f'[policies.a]\napprovers = ["{approver}"]\n').policies[0]
    assert policy.approvers == [approver]


@pytest.mark.parametrize(
    "approver",
    [
        "slack:u1",
        "slack:group:U1",
        "discord:user:x",
        "discord:81234",
        "teams:not-a-guid",
        "email:alice",
        "operator:",
        "alice",
    ],
)
def test_an_approver_of_no_form_is_a_mistake(approver: str) -> None:
    (mistake,) = mistakes(f'[policies.a]\napprovers = ["{approver}"]\n')
    assert (mistake.line, mistake.field) == (2, "policies.a.approvers[0]")
    assert mistake.rule.startswith(f"{approver!r} is not an approver; the forms are ")


def test_approvals_order_and_on_timeout_are_read() -> None:
    (chain,) = parse_policies(
        '[policies.chain]\napprovers = ["slack:U1", "slack:group:S1"]\napprovals = 2\norder = "sequential"\n'
        'on_timeout = "decline"\n'
    ).policies
    assert (chain.approvals, chain.order, chain.on_timeout) == (2, "sequential", "decline")
    assert chain.describe() == (
        "chain: callers any; 2 approver(s); 2 approval(s), sequential order; on timeout decline"
    )
    (plain,) = parse_policies("[policies.plain]\n").policies
    assert (plain.approvals, plain.order, plain.on_timeout) == (1, "any", "cancel")
    (grouped,) = parse_policies('[policies.g]\napprovers = ["slack:group:S1"]\napprovals = 3\n').policies
    assert grouped.approvals == 3  # a user group may hold three people


@pytest.mark.parametrize(
    ("text", "line", "field", "rule"),
    [
        (
            "[policies.p]\napprovals = 2\n",
            1,
            "policies.p.approvers",
            "approvals = 2 needs approvers; list who may approve",
        ),
        (
            '[policies.p]\norder = "sequential"\n',
            1,
            "policies.p.approvers",
            'order = "sequential" needs approvers; list who may approve',
        ),
        (
            '[policies.p]\napprovers = ["slack:U1", "slack:U2"]\napprovals = 3\n',
            3,
            "policies.p.approvals",
            "3 approvals need at least 3 approvers (or a group or role); 2 listed",
        ),
        (
            '[policies.p]\napprovers = ["slack:U1", "slack:U2"]\norder = "sequential"\n',
            1,
            "policies.p.approvals",
            'with order = "sequential" every approver is asked in turn, so approvals must be 2 (the number '
            "of approvers), not 1",
        ),
        ("[policies.p]\napprovals = 0\n", 2, "policies.p.approvals", "must be greater than or equal to 1"),
        (
            "[policies.p]\napprovals = 1.5\n",
            2,
            "policies.p.approvals",
            "must be a whole number (got a number)",
        ),
        (
            '[policies.p]\norder = "random"\n',
            2,
            "policies.p.order",
            "'random' is not one of 'any' or 'sequential'",
        ),
        (
            '[policies.p]\non_timeout = "accept"\n',
            2,
            "policies.p.on_timeout",
            "'accept' is not one of 'cancel' or 'decline'",
        ),
    ],
)
def test_each_approvals_rule_names_its_field(text: str, line: int, field: str, rule: str) -> None:
    assert mistakes(text) == [Mistake(line, field, rule)]


STEPS = """\
[policies.oncall]
timeout  = 600
channels = ["slack", "teams", "discord"]
remind   = [60, 240]
[[policies.oncall.steps]]
after   = 0
channel = "slack"
mention = ["slack:group:S0ONCALL"]
[[policies.oncall.steps]]
after     = 120
channel   = "teams"
target    = "19:incident@thread.tacv2"
mention   = ["teams:0f0e0d0c-0b0a-0908-0706-050403020100"]
approvers = ["discord:user:81234"]
"""


def test_steps_and_reminders_are_read_in_order() -> None:
    (policy,) = parse_policies(STEPS).policies
    assert policy.remind == [60, 240]
    assert [(s.after, s.channel, s.target) for s in policy.steps] == [
        (0, "slack", None),
        (120, "teams", "19:incident@thread.tacv2"),
    ]
    assert policy.steps[1].approvers == ["discord:user:81234"]
    assert policy.describe() == (
        "oncall: callers any; timeout 600 s; channels slack, teams, discord; "
        "steps slack at 0 s, teams at 120 s; reminders at 60 s, 240 s"
    )


@pytest.mark.parametrize(
    ("change", "line", "field", "rule"),
    [
        (
            ("after   = 0", "after   = 5"),
            6,
            "policies.oncall.steps[0].after",
            "the first step must have after = 0",
        ),
        (
            (
                'approvers = ["discord:user:81234"]\n',
                'approvers = []\n[[policies.oncall.steps]]\nafter = 60\nchannel = "discord"\n',
            ),
            16,
            "policies.oncall.steps[2].after",
            "must not be less than the step before's (60 < 120)",
        ),
        (("after     = 120", "after     = 600"), 10, "policies.oncall.steps[1].after", "600 s is not before"),
        (
            ('channel   = "teams"', 'channel   = "web"'),
            12,
            "policies.oncall.steps[1].target",
            "the web form posts nothing, so it has no target",
        ),
        (
            ('"slack", "teams", "discord"', '"slack", "discord"'),
            11,
            "policies.oncall.steps[1].channel",
            "teams is not in this policy's channels (slack, discord)",
        ),
        (
            ('target    = "19:incident@thread.tacv2"', 'target    = "19 incident"'),
            12,
            "policies.oncall.steps[1].target",
            "'19 incident' is not a conversation id",
        ),
        (
            ('mention = ["slack:group:S0ONCALL"]', 'mention = ["discord:role:99123"]'),
            8,
            "policies.oncall.steps[0].mention[0]",
            "'discord:role:99123' cannot be mentioned on slack (use slack:...)",
        ),
        (
            ('approvers = ["discord:user:81234"]', 'approvers = ["bob"]'),
            14,
            "policies.oncall.steps[1].approvers[0]",
            "'bob' is not an approver",
        ),
        (
            ("remind   = [60, 240]", "remind   = [240, 60]"),
            4,
            "policies.oncall.remind",
            "must be in ascending order",
        ),
        (
            ("remind   = [60, 240]", "remind   = [60, 900]"),
            4,
            "policies.oncall.remind[1]",
            "900 s is not before",
        ),
        (
            ('channel = "slack"\nmention', 'chanel = "slack"\nmention'),
            7,
            "policies.oncall.steps[0].chanel",
            "is not a step setting",
        ),
    ],
)
def test_each_step_rule_names_its_line_and_field(
    change: tuple[str, str], line: int, field: str, rule: str
) -> None:
    old, new = change
    assert old in STEPS
    found = mistakes(STEPS.replace(old, new, 1))
    assert any((m.line, m.field) == (line, field) and rule in m.rule for m in found), found


def test_every_mistake_is_listed_at_once_whatever_else_is_wrong() -> None:
    # Each key wrong on its own used to hide every rule between the others: a reminder out of
    # order hid the approvals rule, a mention on the wrong channel the steps' order.
    text = """\
[policies.p]
timeout   = 600
channels  = ["slack", "teams"]
approvers = ["slack:U1"]
approvals = 2
remind    = [240, 60]
targets   = { discord = "123" }
[[policies.p.steps]]
after   = 5
channel = "slack"
mention = ["teams:0f0e0d0c-0b0a-0908-0706-050403020100"]
[[policies.p.steps]]
after   = 700
channel = "discord"
"""
    assert [str(m) for m in mistakes(text)] == [
        "line 5: policies.p.approvals: 2 approvals need at least 2 approvers (or a group or role); 1 listed",
        "line 6: policies.p.remind: must be in ascending order, each once (60 after 240)",
        "line 7: policies.p.targets.discord: discord is not in this policy's channels (slack, teams)",
        "line 9: policies.p.steps[0].after: the first step must have after = 0 (it is the first post)",
        "line 11: policies.p.steps[0].mention[0]: 'teams:0f0e0d0c-0b0a-0908-0706-050403020100' cannot be "
        "mentioned on slack (use slack:...)",
        "line 13: policies.p.steps[1].after: 700 s is not before the policy's timeout (600 s), so it would "
        "never post",
        "line 14: policies.p.steps[1].channel: discord is not in this policy's channels (slack, teams)",
    ]


def test_a_key_wrong_on_its_own_is_not_used_by_the_rules_between_keys() -> None:
    # A wrong timeout is one mistake; the steps and reminders are not measured against it.
    text = '[policies.p]\ntimeout = "soon"\nremind = [60]\n[[policies.p.steps]]\nafter = 0\nchannel = "sms"\n'
    assert [str(m) for m in mistakes(text)] == [
        "line 2: policies.p.timeout: must be a number (got a string)",
        "line 6: policies.p.steps[0].channel: 'sms' is not a channel; the channels are slack, discord, "
        "teams, web, telegram, email",
    ]


def test_a_policy_made_in_code_keeps_the_rules_between_its_keys() -> None:
    with pytest.raises(ValueError, match=r"approvers: approvals = 2 needs approvers"):
        Policy(name="p", approvals=2)


TOOLS = """\
[policies.coding]
[policies.coding.tools]
allow = ["Read", "Bash(npm test *)", "Bash(git status)", "WebFetch(domain:docs.python.org)"]
ask   = ["Bash(git push *)"]
deny  = ["Bash(rm -rf *)", "Edit(**/.env)", "mcp__github__delete_repository"]
"""


def test_tool_rules_are_parsed_with_the_policy_and_decide_calls() -> None:
    coding = parse_policies(TOOLS).policies[0]
    assert coding.tools.allow[1] == "Bash(npm test *)" and len(coding.tools.rules.deny) == 3
    decision = coding.tools.rules.decide("Bash", {"command": "git status && rm -rf /"})
    assert decision is not None and decision.describe() == "deny: Bash(rm -rf *)"
    assert coding.describe() == "coding: callers any; tool rules 4 allow, 1 ask, 3 deny"
    assert not parse_policies("[policies.a]").policies[0].tools.rules


def test_each_malformed_tool_rule_is_named_by_its_line() -> None:
    text = """\
[policies.coding.tools]
allow = ["Read", "Bash(npm test"]
deny  = [
  "Bash(rm -rf *)",
  "WebFetch(docs.python.org)",
  "Edit()",
]
ask = "Bash(git push *)"
allowed = []
"""
    found = [(m.line, m.field, m.rule) for m in mistakes(text)]
    assert found == [
        (2, "policies.coding.tools.allow[1]", "'Bash(npm test' is not a tool rule: missing ')' at the end"),
        (
            5,
            "policies.coding.tools.deny[1]",
            "'WebFetch(docs.python.org)' is not a tool rule: a WebFetch rule is WebFetch(domain:<host>), "
            "like domain:example.com or domain:*.example.com",
        ),
        (
            6,
            "policies.coding.tools.deny[2]",
            "'Edit()' is not a tool rule: an empty specifier: write Edit alone for every use",
        ),
        (8, "policies.coding.tools.ask", "must be a list (got a string)"),
        (9, "policies.coding.tools.allowed", "is not a list of tool rules; the lists are allow, ask, deny"),
    ]
    assert mistakes('[policies.a.tools]\ndeny = ["Read", "Read"]\n')[0].rule == "names Read more than once"
