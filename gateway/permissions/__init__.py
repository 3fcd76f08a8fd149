"""Tool permission prompts (docs/permissions.md): what a person sees of a tool call, secrets masked,
and the result Claude Code and the Claude Agent SDK read back."""
