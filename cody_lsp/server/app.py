"""One server process: the session store, the run manager and their lifecycle, for every face.

A face (server/lsp/, server/acp/) makes one `Application`, attaches its client's port, and
serves inside `Application.serve`, which owns the event loop and the signals:

- the store opens on first use (`manager()`), after the face answered its handshake — opening
  it sweeps runs an ended process left running (marked interrupted) and makes this process the
  subreaper of every command's leftovers (SECURITY.md);
- SIGTERM or SIGINT, the end of the input, or `stop()` (a stuck client) end the serving; however
  it ends, `close()` stops every run (each commits what it completed and sends its terminal
  event), then the store closes — bounded in time.

This module imports nothing heavy: a face makes its `Application` before it answers its
handshake; the run core is imported when the store opens.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..config import ServerConfig
from .core.errors import StoreUnavailable
from .core.models import ModelCatalog

if TYPE_CHECKING:  # imported when the store opens, after the face answered its handshake
    from .core.port import ClientPort
    from .core.runs import RunManager

log = logging.getLogger(__name__)

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
RUNS_STOP_TIMEOUT = 10.0  # seconds for every run to end (and commit) once cancelled


def warm_model_client() -> bool:
    """A run is coming (a client's hint: cody/warmUp, ACP's session/new; or a run admitted): the
    model client's parts of openai start loading in a daemon thread, unless they are loaded
    (True) or loading. The server never loads them by itself at start (agent/model.py)."""
    from .agent.model import warm_up

    return warm_up()


class Application:
    def __init__(self, config: ServerConfig, client: ClientPort):
        self.config = config
        self.client = client
        self.exit_code = 0
        self.closing = False
        self.stopped_by: str | None = None  # a signal's name, "a stuck client", …
        self._manager: RunManager | None = None
        self._opening: asyncio.Future[RunManager] | None = None
        self._main: asyncio.Task[None] | None = None
        # The endpoint's models, asked once per process (core/models.py): every face reads it.
        self.models = ModelCatalog()

    # ------------------------------------------------------------------ the run manager

    @property
    def running(self) -> RunManager | None:
        """The run manager, if the store is open."""
        return self._manager

    async def manager(self) -> RunManager:
        """The run manager, opening the store on first use (StoreUnavailable if it cannot)."""
        if self._manager is not None:
            return self._manager
        opening = self._opening
        if opening is None or (opening.done() and (opening.cancelled() or opening.exception() is not None)):
            opening = self._opening = asyncio.ensure_future(self._open())
        return await asyncio.shield(opening)

    async def _open(self) -> RunManager:
        from .checkpoints.service import open_checkpoints
        from .core.runs import RunManager
        from .store.database import Store
        from .store.errors import StoreError
        from .tools.shell import enable_subreaper

        # The server is the parent of every process a command leaves behind (setsid,
        # nohup …): they are ended with the command that started them (SECURITY.md).
        enable_subreaper()
        try:
            store = await Store.open(self.config.db)
        except StoreError as exc:  # it says what to do (a full disk, a tampered file)
            log.error("could not open the session store: %s", exc.message)
            raise StoreUnavailable(f"cannot open the session database: {exc.message}") from None
        except Exception as exc:
            log.exception("could not open the session store %s", self.config.db)
            raise StoreUnavailable(
                f"cannot open the session database {self.config.db}: {exc}; set CODY_DB to a writable file"
            ) from None
        interrupted = await store.runs.mark_interrupted()
        if interrupted:
            log.warning("marked %d run(s) left by an ended server process as interrupted", interrupted)
        from .mcp.hub import McpHub

        # Checkpoints (server/checkpoints/): their store beside the database, its housekeeping in
        # the background whenever no run is active — the first pass soon after start.
        checkpoints = await open_checkpoints(store, lambda: bool(self._manager and self._manager.busy()))
        self._manager = RunManager(
            store, self.config, self.client, mcp=McpHub(), checkpoints=checkpoints, models=self.models
        )
        self._manager.housekeep()
        return self._manager

    # ------------------------------------------------------------------ serving

    def serve(self, main: Callable[[], Awaitable[None]], *, close: Callable[[], Awaitable[None]]) -> None:
        """Run `main` (the face's serving) in an event loop until it returns, a signal, or
        `stop()`; then `close()` (the face's own close, which calls `stop_runs` and
        `close_store`). The exit code is in `exit_code`."""

        async def serving() -> None:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task()
            assert task is not None
            self._main = task
            # Python installs signal handlers in the main thread only: a server served in another
            # thread (the tests' in-process servers: tests/inprocess.py) is stopped by its client.
            signals = SHUTDOWN_SIGNALS if threading.current_thread() is threading.main_thread() else ()
            for signum in signals:
                loop.add_signal_handler(signum, self._on_signal, signum)
            try:
                await main()
            except asyncio.CancelledError:
                if self.stopped_by is None:
                    raise
                task.uncancel()
            finally:
                self.closing = True
                await close()
                for signum in signals:
                    loop.remove_signal_handler(signum)

        try:
            asyncio.run(serving())
        except KeyboardInterrupt:  # before the signal handlers were installed
            pass

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.stopped_by is not None or self.closing:
            log.warning("%s: already shutting down", name)
            return
        log.warning("%s: cancelling the runs and shutting down", name)
        self.stop(name, exit_code=0)

    def stop(self, reason: str, *, exit_code: int) -> None:
        """End the serving (the runs are cancelled and committed by the close that follows)."""
        if self.stopped_by is not None or self.closing or self._main is None:
            return
        self.stopped_by = reason
        self.exit_code = exit_code
        self._main.cancel()

    # ------------------------------------------------------------------ closing

    async def stop_runs(self) -> None:
        """Cancel every run and wait (bounded) until each has committed and sent its terminal
        event, and the processes of its commands are ended."""
        self.closing = True
        opening = self._opening
        if self._manager is None and opening is not None and not opening.done():
            await asyncio.wait([opening], timeout=RUNS_STOP_TIMEOUT)
        if self._manager is None:
            return
        try:
            await asyncio.wait_for(self._manager.cancel_all(), RUNS_STOP_TIMEOUT)
        except TimeoutError:
            log.error("runs did not end within %.0f s of being cancelled; closing anyway", RUNS_STOP_TIMEOUT)
        from .tools.shell import settle

        # A cancelled command's processes are swept after its turn ended (tools/shell.py).
        if not await settle(RUNS_STOP_TIMEOUT):
            log.error("the processes of cancelled commands were not all ended in time; the guard ends them")

    async def close_store(self) -> None:
        manager, self._manager = self._manager, None
        await self.models.close()
        if manager is not None:
            await manager.close(timeout=RUNS_STOP_TIMEOUT)
            from .agent.model import close_clients

            await close_clients()  # the model clients of this loop, and their connections
