"""Errors a user can cause, each naming the stack-file field and the fix, so no traceback is ever needed; a credential
a value carries in a URL is never repeated in them (spec/redaction.py)."""

from __future__ import annotations

from dataclasses import dataclass

from spec.redaction import redacted


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a stack: where (a dotted field path), what, and how to fix it; URL credentials in any of
    them written `xxxxx`, whoever reads them."""

    path: str
    message: str
    fix: str = ""

    def __post_init__(self) -> None:
        for name in ("path", "message", "fix"):
            object.__setattr__(self, name, redacted(getattr(self, name)))

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}"
        return f"{text} Fix: {self.fix}" if self.fix else text


class SpecError(Exception):
    """A stack that cannot become a cluster; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = problems
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        where = f" in {redacted(self.source)}" if self.source else ""
        count = len(self.problems)
        head = f"invalid stack{where}: {count} problem{'s' if count != 1 else ''}"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])


class ToolchainMissing(Exception):
    """A tool a command runs is not installed where it looks (Terraform, a provider): the message says what to
    install."""
