"""The chat's `/usage` (tokens per run and for the session) and `/context` (what fills the model's
context window), from the server's own counts: the runs of cody/getSession (how each ended and
its tokens), `SessionInfo.usage` (every model request of the session, the summaries of its
compactions included), and cody/getContext (the next request, part by part)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..protocol.wire import ContextReport, RunEnd, SessionInfo
from .status_line import cost, money, percent, tokens_text

MAX_RUNS = 50  # the last runs /usage lists
PAGE = 500


async def runs_of(client: Any, session_id: str) -> tuple[SessionInfo, list[tuple[RunEnd, str]], int]:
    """The session, its last MAX_RUNS runs with the first line of each one's prompt, and how many
    runs came before those."""
    ends: list[RunEnd] = []
    prompts: dict[str, str] = {}
    page = await client.get_session(session_id, limit=PAGE)
    session = page.session
    while True:
        for message in page.messages:
            if (
                message.role == "user"
                and message.kind == "message"
                and message.run_id
                and message.run_id not in prompts
            ):
                prompts[message.run_id] = (message.content or "").strip().splitlines()[0] if message.content else ""
        ends = list(page.runs or []) + ends
        if page.next_before is None or len(ends) > MAX_RUNS:
            break
        page = await client.get_session(session_id, limit=PAGE, before=page.next_before)
    earlier = max(0, len(ends) - MAX_RUNS)
    return session, [(end, prompts.get(end.run_id, "")) for end in ends[earlier:]], earlier


def _number(n: int) -> str:
    return f"{n:,}"


async def show_usage(
    console: Console, client: Any, session_id: str | None, price: tuple[float, float] | None = None
) -> None:
    if session_id is None:
        console.print("[dim]No tokens used yet: send a message first.[/]")
        return
    session, runs, earlier = await runs_of(client, session_id)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("run", justify="right", no_wrap=True)
    for header in ("input", "output", "total"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("prompt", overflow="ellipsis", no_wrap=True, ratio=1)
    for n, (end, prompt) in enumerate(runs, earlier + 1):
        usage = end.usage
        state = "" if end.status == "done" else f" ({end.status})"
        table.add_row(
            str(n),
            _number(usage.input_tokens),
            _number(usage.output_tokens),
            _number(usage.total_tokens),
            Text(prompt + state, style="dim"),
        )
    total = session.usage
    if total is not None:
        table.add_row(
            Text("session", style="bold"),
            Text(_number(total.input_tokens), style="bold"),
            Text(_number(total.output_tokens), style="bold"),
            Text(_number(total.total_tokens), style="bold"),
            Text("every model request, compactions included", style="dim"),
        )
    console.print(Text.assemble(("Tokens", "bold"), (f" of session {session.id}", "dim")))
    if earlier:
        console.print(f"[dim]… {earlier} earlier run{'s' if earlier != 1 else ''}[/]")
    if not runs and total is None:
        console.print("[dim]No model request yet.[/]")
        return
    console.print(table)
    if total is not None and price is not None:
        spent = cost(total.input_tokens, total.output_tokens, price)
        console.print(
            f"[dim]cost: {money(spent)} (at ${price[0]:g} / ${price[1]:g} per million input / output tokens)[/]"
        )
    if session.context_tokens is not None:
        console.print(
            f"[dim]context: the last request was {_number(session.context_tokens)} tokens (/context says of what)[/]"
        )


def _bar(share: float, width: int = 30) -> Text:
    filled = max(0, min(width, round(share * width)))
    style = "red" if share >= 0.9 else "yellow" if share >= 0.7 else "green"
    return Text.assemble(("█" * filled, style), ("░" * (width - filled), "dim"))


def show_context(console: Console, report: ContextReport) -> None:
    window = report.window
    usable = max(1, window - report.output_reserve)
    console.print(
        Text.assemble(
            ("Context", "bold"),
            f" of {report.model or '?'}: a window of {_number(window)} tokens, ",
            (f"{_number(report.output_reserve)} of them kept for the answer", "dim"),
        )
    )
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("part", no_wrap=True, overflow="ellipsis", ratio=1)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("of the window", justify="right", no_wrap=True)

    def row(name: str | Text, tokens: int, style: str = "") -> None:
        table.add_row(
            name if isinstance(name, Text) else Text(name, style=style),
            Text(_number(tokens), style=style),
            Text(percent(tokens / window), style=style or "dim"),
        )

    row("system prompt", report.system_tokens)
    for item in report.instructions:
        row(Text.assemble("instructions ", (item.path, "dim")), item.tokens)
    row(f"tools ({report.tool_count})", report.tools_tokens)
    summary = ", from a summary" if report.summarized else ""
    row(
        f"history ({report.history_messages} message{'s' if report.history_messages != 1 else ''}{summary})",
        report.history_tokens,
    )
    row("the next request, before its prompt", report.total_tokens, "bold")
    console.print(table)
    share = report.total_tokens / usable
    console.print(
        Text.assemble(
            _bar(report.total_tokens / window),
            f"  {percent(report.total_tokens / window)} of the window, {percent(share)} of what a request may take",
        )
    )
    if report.context_tokens is not None:
        console.print(
            f"[dim]the last request, as the endpoint counted it: {_number(report.context_tokens)} tokens "
            f"({tokens_text(report.context_tokens)}); the figures above are estimates[/]"
        )
    else:
        console.print("[dim]estimates (characters, calibrated once the endpoint has counted a request)[/]")
    if share >= 0.6:
        console.print(f"[yellow]{escape('/compact')} summarizes the history to free room[/]")
