"""Requests take effect in the order they were read (core/order.py), whatever each waits for."""

from __future__ import annotations

import asyncio

import pytest

from cody_lsp.server.core.order import Later, RequestOrder, in_turn


async def test_tickets_enter_in_the_order_they_were_taken():
    order = RequestOrder()
    entered: list[int] = []

    async def request(n: int, work: float) -> None:
        async with ticket[n]:
            entered.append(n)
            await asyncio.sleep(work)  # taking its effect: the next waits

    ticket = [order.ticket() for _ in range(4)]
    # Started in reverse: the order of the tickets is what counts.
    await asyncio.gather(*(request(n, 0.01 * (4 - n)) for n in reversed(range(4))))
    assert entered == [0, 1, 2, 3]


async def test_a_ticket_given_up_passes_its_turn_on_only_after_those_ahead():
    order = RequestOrder()
    first, skipped, last = order.ticket(), order.ticket(), order.ticket()
    entered: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with first:
            entered.append("first")
            await release.wait()

    async def follower() -> None:
        async with last:
            entered.append("last")

    tasks = [asyncio.ensure_future(holder()), asyncio.ensure_future(follower())]
    await asyncio.sleep(0.01)
    skipped.release()  # e.g. params that did not parse: it never enters
    await asyncio.sleep(0.01)
    assert entered == ["first"]  # `last` still waits for `first`
    release.set()
    await asyncio.gather(*tasks)
    assert entered == ["first", "last"]


async def test_a_request_cancelled_while_it_waits_never_blocks_those_behind():
    order = RequestOrder()
    first, cancelled, last = order.ticket(), order.ticket(), order.ticket()
    release = asyncio.Event()
    entered: list[str] = []

    async def enter(ticket, name: str, wait: asyncio.Event | None = None) -> None:
        async with ticket:
            entered.append(name)
            if wait is not None:
                await wait.wait()

    holding = asyncio.ensure_future(enter(first, "first", release))
    waiting = asyncio.ensure_future(enter(cancelled, "cancelled"))
    behind = asyncio.ensure_future(enter(last, "last"))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.sleep(0.01)
    assert entered == ["first"]
    release.set()
    await asyncio.gather(holding, behind)
    assert entered == ["first", "last"] and waiting.cancelled()


async def test_a_request_cancelled_before_its_effect_still_takes_it_then_undoes_it():
    """in_turn (both faces): cancelled while waiting for its turn, the effect is taken anyway in
    that turn, then undone (Later.cancelled), and the request ends cancelled; not cancelled, it
    answers what its Later waits for."""
    order = RequestOrder()
    ahead, mine, after = order.ticket(), order.ticket(), order.ticket()
    done: list[str] = []

    async def effect() -> Later:
        done.append("taken")

        async def undo() -> None:
            done.append("undone")

        async def wait() -> str:
            await asyncio.sleep(30)
            return "never"

        return Later(wait, undo)

    async def answer() -> Later:
        async def wait() -> str:
            return "answered"

        return Later(wait)

    async with ahead:
        request = asyncio.ensure_future(in_turn(mine, effect))
        await asyncio.sleep(0.01)
        request.cancel()
        await asyncio.sleep(0.01)
        assert done == []  # its turn has not come
    with pytest.raises(asyncio.CancelledError):
        await request
    assert done == ["taken", "undone"]
    assert await in_turn(after, answer) == "answered"


async def test_a_sessions_lane_waits_for_its_own_and_for_what_has_no_lane_not_for_other_sessions():
    order = RequestOrder()
    entered: list[str] = []
    gates = {name: asyncio.Event() for name in ("global", "a1", "b1", "a2", "after")}

    async def request(ticket, name: str) -> None:
        async with ticket:
            entered.append(name)
            await gates[name].wait()

    # Read in this order: one without a lane, then a1, b1, a2 (lanes a and b), then one without.
    tickets = [
        ("global", order.ticket()),
        ("a1", order.ticket("a")),
        ("b1", order.ticket("b")),
        ("a2", order.ticket("a")),
        ("after", order.ticket()),
    ]
    tasks = [asyncio.ensure_future(request(t, name)) for name, t in tickets]
    await asyncio.sleep(0.01)
    assert entered == ["global"]  # everything read after it waits for it
    assert not order.idle
    gates["global"].set()
    await asyncio.sleep(0.01)
    assert entered == ["global", "a1", "b1"]  # b1 does not wait for a1; a2 does
    gates["a1"].set()
    await asyncio.sleep(0.01)
    assert entered == ["global", "a1", "b1", "a2"]  # `after` waits for b1 too
    gates["a2"].set()
    await asyncio.sleep(0.01)
    assert entered[-1] == "a2"
    gates["b1"].set()
    await asyncio.sleep(0.01)
    assert entered[-1] == "after"
    gates["after"].set()
    await asyncio.gather(*tasks)
    assert order.idle


async def test_a_lane_ticket_given_up_passes_its_turn_on_in_its_lane_only_after_those_ahead():
    order = RequestOrder()
    first = order.ticket()
    skipped, behind, other = order.ticket("a"), order.ticket("a"), order.ticket("b")
    entered: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with first:
            entered.append("first")
            await release.wait()

    async def enter(ticket, name: str) -> None:
        async with ticket:
            entered.append(name)

    tasks = [asyncio.ensure_future(holder()), asyncio.ensure_future(enter(behind, "behind"))]
    tasks.append(asyncio.ensure_future(enter(other, "other")))
    skipped.release()
    await asyncio.sleep(0.01)
    assert entered == ["first"]
    release.set()
    await asyncio.gather(*tasks)
    assert sorted(entered[1:]) == ["behind", "other"]
