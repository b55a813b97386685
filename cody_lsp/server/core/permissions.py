"""Whether a tool call may run: the tool policy, the approval rules that last, the client's answer.

In that order, for every call of a known tool (`Permissions.check`):

1. The policy (`CODY_TOOL_POLICY`; by default the tools that change nothing are `allow` and
   `write_file`, `edit_file`, `run_command` are `ask`): `deny` refuses without asking anyone,
   `allow` runs without asking, `sandboxed` (run_command) runs it without asking in the
   sandbox (tools/sandbox.py) — or, where there is none, asks as `ask` does (and refuses when
   nobody can be asked): nothing it covers runs unsandboxed unasked.
2. `ask`: a stored rule that covers the call refuses it without asking when it is a refusal (an
   ACP client's "reject always", `refuse`; it holds even when nobody can be asked), else allows it
   without asking (an earlier "allow always" of this session, or of any session of its folder) —
   in the sandbox when the rule says `sandboxed` (a rule that does not wins over one that does).
3. Otherwise the client is asked (`cody/requestPermission`). A client that cannot answer
   (it did not declare `permissions`) is not asked: its asker raises `NoApprover` at once and
   the call is refused, naming the settings that allow it (`NO_APPROVER`) — what `cody-lsp run`
   without `--yes` gets; only `CODY_APPROVALS=never` (the environment's "never ask") makes the
   asker answer `allow` (never for what `sandboxed` would otherwise run unsandboxed: that is
   refused, `NOBODY_TO_ASK`). An `allow_always` answer stores a rule; pending requests the new rule covers are answered by
   it, and their prompts withdrawn (the asker's task is cancelled, which sends
   `$/cancelRequest`).

MCP tools (`mcp__<server>__<tool>`, server/mcp/) are `ask` by default, read-only or not; the policy
and the rules also take `mcp__<server>__*`, every tool of a server (a tool's own policy entry wins),
which the request's `options.toolPattern` offers.

A run_command that asks to run outside the sandbox (`"sandbox": false`, with a `reason`) is
always asked about, whatever the policy and the rules (unless the policy is `deny`, or nobody
can be asked and the policy would run it unasked anyway); its answer is for that call only.

A rule's `commandPrefix` covers a `run_command` whose words start with the prefix's words;
a compound command (anything with `;`, `&`, `|`, a backtick, `$(`, `<`, `>` or a line break,
even quoted) is never covered by a prefix. A rule's `domain` covers a `web_fetch` of a URL on
that host. web_fetch is refused before all this when the network is shut for the run
(kit.py, `network_shut`: commands sandboxed without a network).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...config import SANDBOXED_TOOLS, some_of
from ...protocol.wire import (
    PermissionChoice,
    PermissionOptions,
    PermissionOutcome,
    PermissionParams,
    PermissionResult,
    RuleDecision,
    RuleScope,
    UnsandboxedRequest,
)
from ..mcp.definitions import covers, is_mcp_name, server_of, server_pattern
from ..store.connection import now
from ..store.database import Store
from ..store.records import RuleRecord
from ..tools import TOOLS, sandbox
from ..tools.edit_diffs import proposal
from ..tools.sandbox import SANDBOXED, Sandboxed
from .kit import WEB_TOOL, network_shut

log = logging.getLogger(__name__)

# (the run asking — runs.LiveRun, the request) → the client's answer: a PermissionResult, or
# just its outcome; "allow" at once with CODY_APPROVALS=never; NoApprover raised when the
# client cannot answer.
Asker = Callable[[Any, PermissionParams], Awaitable[PermissionResult | str]]

# Said to the model when the client answered "deny": a person, or a client acting for one
# (`cody-lsp run` without --yes refuses without asking), so it names no one.
USER_DENIED = (
    "Permission to run {name} was refused by the user's client. Do not retry it; ask the user what they want instead."
)
# A refusal with the user's words: what they want instead (at most MAX_FEEDBACK characters of it).
USER_DENIED_WITH_FEEDBACK = (
    "Permission to run {name} was refused by the user, who said what to do instead:\n{feedback}\n"
    "Do not retry the same call; follow what the user said."
)
MAX_FEEDBACK = 4000
# Said when a refusal rule covered the call (the user's "reject always").
RULE_DENIED = (
    "{name} was refused without asking: the user chose to always reject it here. Do not retry it; "
    "do the task another way, or ask the user what they want instead."
)
POLICY_DENIED = (
    "{name} is not allowed on this server (its tool policy says deny); it did not run. "
    "Do not retry it: do the task another way, or tell the user what you would need."
)
# Said when nobody can be asked: the client does not answer permission requests.
NO_APPROVER = (
    "{name} needs the user's approval, and this client cannot ask for it (it does not answer "
    "cody/requestPermission); it did not run. Do not retry it: do the task without it, or tell the user. "
    "The user can allow it without asking: CODY_TOOL_POLICY={name}=allow in the server's environment "
    "(or cody.toolPolicy in the editor's settings), or CODY_APPROVALS=never for every tool."
)
NOBODY_TO_ASK = (
    "run_command did not run: {why}, and nobody can be asked here. Run it sandboxed (without "
    '"sandbox": false), or tell the user what you would need.'
)
NO_SANDBOX_HERE = (
    "run_command did not run: the client chose to run it sandboxed, but there is no sandbox here ({reason})."
)
OPTIONS_OUTCOMES: list[PermissionOutcome] = ["allow", "allow_always", "deny"]
OPTIONS_SCOPES: list[RuleScope] = ["session", "folder"]
SANDBOXED_LABEL = "Run commands in this folder without asking (sandboxed)"
SANDBOXED_RULE = PermissionChoice(SANDBOXED_LABEL, "allow_always", "folder", True)
MAX_REASON_CHARS = 1000

# The permission check's answer: None (run it as it is), SANDBOXED (run it in the sandbox), or
# the refusal the model is told.
Verdict = str | Sandboxed | None

_COMPOUND = re.compile(r"[;&|`<>\n\r]|\$\(")
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9._:-]*")


# ------------------------------------------------------------------------------ command prefixes


def is_compound(command: str) -> bool:
    """More than one simple command, or a redirection: never covered by a prefix."""
    return bool(_COMPOUND.search(command))


def command_words(text: str) -> list[str] | None:
    """The shell words of a simple command; None if it is compound or does not parse."""
    if is_compound(text):
        return None
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote
        return None


def valid_prefix(prefix: str) -> bool:
    return bool(command_words(prefix))


def prefix_covers(prefix: str, command: str) -> bool:
    """Whether `command` starts with the whole words of `prefix` (`npm test` covers
    `npm test -- -k x`, not `npm testing` nor `npm test; rm -rf x`)."""
    words, head = command_words(command), command_words(prefix)
    return bool(head) and words is not None and head is not None and words[: len(head)] == head


# Programs no "always allow" prefix is offered for: a rule for `rm` (or `rm build`, which also
# covers `rm build -rf ~`) would allow every deletion; the same for what moves, overwrites or
# changes the permissions of files, fetches or sends over the network, gains privileges, or runs
# another command (wrappers like `xargs`, `env`, `sudo`).
_NO_PREFIX_PROGRAMS = frozenset(
    "rm rmdir unlink shred truncate mv cp dd install ln mkfs mke2fs mkswap fdisk sfdisk parted wipefs "
    "chmod chown chgrp chattr setfacl curl wget nc ncat netcat socat telnet ftp scp sftp rsync ssh "
    "sudo su doas pkexec kill killall pkill reboot shutdown halt poweroff systemctl service crontab "
    "env xargs eval exec nohup timeout nice ionice watch find tee".split()
)
# Shells and interpreters run any code: no prefix that is only their name (`python -c …`, `sh -c …`);
# with a script (`python manage.py`) the script is part of the prefix.
_RUNS_ANY_CODE = frozenset(
    "sh bash zsh dash ksh fish csh tcsh python python2 python3 pypy pypy3 node deno bun perl ruby php lua "
    "awk gawk sed osascript powershell pwsh".split()
)
# Subcommands that publish, rewrite or discard work: no prefix (`git push` would allow every push).
_NO_PREFIX_SUBCOMMANDS = {
    "git": frozenset(
        "push reset clean rebase checkout restore switch rm mv branch tag stash gc prune filter-branch "
        "filter-repo update-ref reflog remote config submodule worktree am apply cherry-pick revert merge pull".split()
    ),
    "npm": frozenset("publish unpublish deprecate exec x dist-tag owner access token adduser login".split()),
    "yarn": frozenset("publish npm dlx".split()),
    "pnpm": frozenset("publish dlx exec".split()),
    "cargo": frozenset("publish yank owner login".split()),
    "docker": frozenset("rm rmi run exec system volume push login".split()),
    "kubectl": frozenset("delete apply exec replace patch scale drain cordon".split()),
}


def suggest_prefix(command: str) -> str | None:
    """A prefix a client may offer for "always allow": the program and its subcommand; None for
    a compound command, and for programs whose name (or subcommand) alone would allow too much:
    destructive, network, privilege and wrapper programs, a bare shell or interpreter."""
    words = command_words(command)
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in _NO_PREFIX_PROGRAMS:
        return None
    head = words[:2] if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]) else words[:1]
    if len(head) == 1 and program in _RUNS_ANY_CODE:
        return None
    if len(head) == 2 and head[1] in _NO_PREFIX_SUBCOMMANDS.get(program, frozenset()):
        return None
    return shlex.join(head)


def url_host(args: dict[str, Any]) -> str | None:
    """The host of a web_fetch call's URL, lower-cased (None: none can be read)."""
    url = args.get("url")
    if not isinstance(url, str):
        return None
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def rule_covers(rule: RuleRecord, tool_name: str, args: dict[str, Any]) -> bool:
    """Whether the rule allows this call (its scope is checked by whoever found the rule); a
    rule for `mcp__<server>__*` covers every tool of that MCP server."""
    if not covers(rule.tool_name, tool_name):
        return False
    if rule.domain is not None:
        return url_host(args) == rule.domain
    if rule.command_prefix is None:
        return True
    command = args.get("command")
    return isinstance(command, str) and prefix_covers(rule.command_prefix, command)


def rule_applies(rule: RuleRecord, session_id: str, folder: str) -> bool:
    if rule.scope == "folder":
        return rule.workspace_folder == folder
    return rule.session_id == session_id


def asks_unsandboxed(tool_name: str, args: dict[str, Any]) -> bool:
    """A run_command that asks to run outside the sandbox (`"sandbox": false`)."""
    return tool_name == "run_command" and args.get("sandbox") is False


def unsandboxed_request(args: dict[str, Any]) -> UnsandboxedRequest:
    reason = args.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return UnsandboxedRequest("(no reason given)")
    return UnsandboxedRequest(reason.strip()[:MAX_REASON_CHARS])


def options_for(tool_name: str, args: dict[str, Any], *, sandboxed: bool = False) -> PermissionOptions:
    """What the client may answer; `sandboxed`: the sandbox is there to offer."""
    if asks_unsandboxed(tool_name, args):  # this call only: no rule comes of the answer
        return PermissionOptions(["allow", "deny"], [])
    prefix = None
    if tool_name == "run_command" and isinstance(args.get("command"), str):
        prefix = suggest_prefix(args["command"])
    server = server_of(tool_name)
    pattern = server_pattern(server) if server is not None else None
    rule = SANDBOXED_RULE if sandboxed and tool_name in SANDBOXED_TOOLS else None
    domain = url_host(args) if tool_name == WEB_TOOL else None
    return PermissionOptions(
        list(OPTIONS_OUTCOMES), list(OPTIONS_SCOPES), prefix, tool_pattern=pattern, sandboxed_rule=rule, domain=domain
    )


# ------------------------------------------------------------------------------ policy


class ToolPolicy:
    """allow | sandboxed | ask | deny per tool (sandboxed: run_command only): the defaults (ask
    before a tool that changes things), then `CODY_TOOL_POLICY`. A name that is not a tool makes `problem` say so (every run reports it)."""

    def __init__(self, overrides: dict[str, str] | None = None):
        self.decisions = {name: spec.policy or ("ask" if spec.mutating else "allow") for name, spec in TOOLS.items()}
        overrides = overrides or {}
        # MCP tools (`mcp__<server>__<tool>`, `mcp__<server>__*`) are never unknown: servers come and go.
        unknown = sorted(n for n in set(overrides) - set(TOOLS) if not is_mcp_name(n))
        self.problem: str | None = None
        if unknown:
            self.problem = (
                f"CODY_TOOL_POLICY names {some_of([repr(name)[:60] for name in unknown])}, which {'is not a tool' if len(unknown) == 1 else 'are not tools'}"
                f"; the tools are {', '.join(sorted(TOOLS))}"
            )
        self.decisions.update({k: v for k, v in overrides.items() if k in TOOLS or is_mcp_name(k)})
        for name in set(self.decisions) - set(SANDBOXED_TOOLS):
            if self.decisions[name] == "sandboxed":  # only run_command has a sandbox: ask
                self.decisions[name] = "ask"

    def decision(self, tool_name: str) -> str:
        """The tool's own entry, else its MCP server's (`mcp__<server>__*`), else "ask"."""
        found = self.decisions.get(tool_name)
        if found is None:
            server = server_of(tool_name)
            found = self.decisions.get(server_pattern(server)) if server is not None else None
        return found or "ask"


# ------------------------------------------------------------------------------ the gate


@dataclass(eq=False)
class _Pending:
    """A request the client has not answered yet; `settled` is set to the decision of a new rule
    that covers it."""

    session_id: str
    folder: str
    tool_name: str
    args: dict[str, Any]
    by_rules: bool = True  # False: a call outside the sandbox, which only a refusal rule answers
    settled: asyncio.Future[RuleRecord] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class NoApprover(Exception):
    """Raised by an asker whose client cannot answer permission requests: the call is refused
    with `NO_APPROVER`."""


def as_result(answer: PermissionResult | str) -> PermissionResult:
    """The client's answer (a face has validated it); an outcome that is not one counts as deny."""
    if isinstance(answer, PermissionResult):
        return answer
    if answer in OPTIONS_OUTCOMES:
        return PermissionResult(answer)
    log.warning("a permission answer that is not valid counts as deny: %r", answer)
    return PermissionResult("deny")


class Permissions:
    def __init__(
        self, store: Store, policy: ToolPolicy, asker: Asker | None, can_ask: Callable[[], bool] | None = None
    ):
        self.store = store
        self.policy = policy
        self._asker = asker
        # Whether a person answers (approvals on): when not, the asker refuses (NoApprover) or,
        # under CODY_APPROVALS=never, answers "allow" at once.
        self._can_ask = can_ask or (lambda: asker is not None)
        self._pending: list[_Pending] = []
        self._said_no_sandbox = False

    async def check(
        self,
        run: Any,
        call_id: str,
        tool_name: str,
        args: dict[str, Any],
        policy: ToolPolicy | None = None,
        *,
        hook: str | None = None,
    ) -> Verdict:
        """None if the call may run as it is, SANDBOXED if in the sandbox; else why not, as the
        model is told (`policy`: the run's, when its settings are not the server's). `hook`: what a
        PreToolUse hook said (core/run_hooks.py): "ask" asks even where the policy or a rule would
        allow; "allow" skips the question where one would be asked — never against a `deny` policy
        or rule, the sandbox (the policy `sandboxed`, a sandboxed rule), or a command asking to
        leave it."""
        decision = (policy or self.policy).decision(tool_name)
        if decision == "deny":
            return POLICY_DENIED.format(name=tool_name)
        if tool_name == WEB_TOOL:
            shut = network_shut((policy or self.policy).decision("run_command"), getattr(run, "config", None))
            if shut is not None:
                return shut
        support = sandbox.available()
        unsandboxed = asks_unsandboxed(tool_name, args)
        if decision == "sandboxed":
            if support.available and not unsandboxed and hook != "ask":
                return SANDBOXED
            if not support.available:
                self._no_sandbox(support.reason)
            if self._asker is None or not self._can_ask():
                why = "it asked to run outside the sandbox" if support.available else "there is no sandbox here"
                return NOBODY_TO_ASK.format(why=why)
        elif decision == "allow" and hook != "ask" and (not unsandboxed or not self._can_ask()):
            return None  # nobody to ask about leaving the sandbox: the policy runs commands unasked anyway
        session_id, folder = run.session_id or "", run.folder
        covering = await self._covering(session_id, folder, tool_name, args)
        if any(rule.decision == "deny" for rule in covering):
            return RULE_DENIED.format(name=tool_name)
        if self._asker is None:
            return None
        if not unsandboxed and hook != "ask":
            if any(not rule.sandboxed for rule in covering):
                return None
            if support.available and covering:
                return SANDBOXED
            if hook == "allow" and decision != "sandboxed":
                return None  # the user's hook allowed it: not asked (a sandboxed policy still asks)
        try:
            answer = await self._ask(run, call_id, tool_name, args, unsandboxed, support.available)
        except NoApprover:
            return NO_APPROVER.format(name=tool_name)
        if isinstance(answer, RuleRecord):  # a rule given meanwhile answers it
            if answer.decision != "deny":
                return SANDBOXED if answer.sandboxed else None
            answer = PermissionResult("deny")
        if answer.outcome == "deny":
            feedback = (answer.feedback or "").strip()
            if feedback:
                return USER_DENIED_WITH_FEEDBACK.format(name=tool_name, feedback=feedback[:MAX_FEEDBACK])
            return USER_DENIED.format(name=tool_name)
        if answer.outcome == "allow_always" and not unsandboxed:
            if answer.sandboxed and not support.available:
                return NO_SANDBOX_HERE.format(reason=support.reason)
            await self._remember(session_id, folder, tool_name, answer, args)
            return SANDBOXED if answer.sandboxed else None
        return None

    def _no_sandbox(self, reason: str | None) -> None:
        if not self._said_no_sandbox:
            self._said_no_sandbox = True
            log.warning(
                "the tool policy says run_command=sandboxed, but there is no sandbox here (%s): "
                "such commands are asked about instead",
                reason,
            )

    async def _covering(self, session_id: str, folder: str, tool_name: str, args: dict[str, Any]) -> list[RuleRecord]:
        """The stored rules that cover this call, its own and its MCP server's: refusals, and the
        rules that allow (sandboxed ones only where there is a sandbox)."""
        server = server_of(tool_name)
        covering: list[RuleRecord] = []
        for name in [tool_name] + ([server_pattern(server)] if server is not None else []):
            rules = await self.store.rules.listed(folder=folder, session_id=session_id, tool_name=name)
            usable = [rule for rule in rules if not rule.sandboxed or sandbox.available().available]
            covering += [rule for rule in usable if rule_covers(rule, tool_name, args)]
        return covering

    async def _ask(
        self, run: Any, call_id: str, tool_name: str, args: dict[str, Any], unsandboxed: bool, sandboxed: bool
    ) -> PermissionResult | RuleRecord:
        """The client's answer, or the rule given meanwhile that answered instead."""
        assert self._asker is not None
        call = proposal() if self._can_ask() else None
        checked = await call.check() if call is not None and call.name == tool_name else None
        if call is not None and call.answered() is not None:
            return PermissionResult("deny")  # not asked: the turn says what the check found
        params = PermissionParams(
            run.run_id,
            run.session_id or "",
            call_id,
            tool_name,
            args,
            run.folder,
            options_for(tool_name, args, sandboxed=sandboxed),
            unsandboxed_request(args) if unsandboxed else None,
            getattr(run, "parent_tool_call_id", None),  # a subagent's call (core/agents.py ChildAsking)
            diff=checked.diff if checked is not None else None,
        )
        pending = _Pending(params.session_id, params.workspace_folder, tool_name, args, not unsandboxed)
        self._pending.append(pending)
        asking = asyncio.ensure_future(self._asker(run, params))
        either: list[asyncio.Future[Any]] = [asking, pending.settled]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._pending.remove(pending)
            if not asking.done():
                asking.cancel()  # the client's prompt is withdrawn ($/cancelRequest) before the run goes on
                await asyncio.wait([asking])
        if pending.settled.done():
            return pending.settled.result()
        try:
            return as_result(asking.result())
        except NoApprover:
            raise
        except Exception:
            log.exception("asking for permission failed; denying")
            return PermissionResult("deny")

    async def _remember(
        self, session_id: str, folder: str, tool_name: str, answer: PermissionResult, args: dict[str, Any]
    ) -> None:
        """Store the rule an allow_always answer gives, and let it answer the pending requests it covers."""
        prefix = None
        if tool_name == "run_command" and answer.command_prefix is not None:
            if not valid_prefix(answer.command_prefix):
                log.warning(
                    "commandPrefix %r cannot cover a command; allowed once, no rule kept", answer.command_prefix
                )
                return
            prefix = answer.command_prefix.strip()
        domain = None
        if tool_name == WEB_TOOL and answer.domain is not None:
            domain = answer.domain.strip().rstrip(".").lower()
            if domain != url_host(args):
                log.warning("domain %r is not the fetched URL's host; allowed once, no rule kept", answer.domain)
                return
        covered = tool_name
        if answer.tool_pattern is not None:
            if not covers(answer.tool_pattern, tool_name):
                log.warning(
                    "toolPattern %r does not cover %s; allowed once, no rule kept", answer.tool_pattern, tool_name
                )
                return
            covered = answer.tool_pattern
        scope = answer.scope or "session"
        rule = RuleRecord(
            f"rule_{uuid.uuid4().hex[:20]}",
            covered,
            scope,
            folder,
            now(),
            session_id if scope == "session" else None,
            prefix,
            sandboxed=True if answer.sandboxed and tool_name in SANDBOXED_TOOLS else None,
            domain=domain,
        )
        try:
            await self.store.rules.add(rule)
        except Exception:  # e.g. the session was deleted meanwhile: the call is still allowed once
            log.warning("could not store the permission rule for %s", tool_name, exc_info=True)
            return
        self._settle(rule, "allow")

    async def refuse(self, request: PermissionParams) -> None:
        """Keep a rule that refuses, without asking, every later call of the request's tool in its
        session (an ACP client's "reject always"), and refuse the pending requests it covers."""
        rule = RuleRecord(
            f"rule_{uuid.uuid4().hex[:20]}",
            request.tool_name,
            "session",
            request.workspace_folder,
            now(),
            request.session_id,
            decision="deny",
        )
        try:
            await self.store.rules.add(rule)
        except Exception:  # e.g. the session was deleted meanwhile: this call is still refused
            log.warning("could not store the refusal rule for %s", request.tool_name, exc_info=True)
            return
        self._settle(rule, "deny")

    def _settle(self, rule: RuleRecord, decision: RuleDecision) -> None:
        """Answer the pending requests a new rule covers with its decision (their prompts are withdrawn)."""
        for pending in self._pending:
            if (
                not pending.settled.done()
                and (pending.by_rules or decision == "deny")
                and rule_applies(rule, pending.session_id, pending.folder)
                and rule_covers(rule, pending.tool_name, pending.args)
            ):
                pending.settled.set_result(rule)

    async def list_rules(self, *, folder: str | None, session_id: str | None) -> list[RuleRecord]:
        return await self.store.rules.listed(folder=folder, session_id=session_id)

    async def revoke(self, rule_id: str) -> bool:
        return await self.store.rules.delete(rule_id)
