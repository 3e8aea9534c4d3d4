"""An AsyncEnv whose connection the server closed (its daemon drained and
restarted) must be able to open a new session: connect() and the next
reset, as after a request_timeout."""

from __future__ import annotations

import asyncio

import harnessd


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_env_reconnects_after_the_daemon_restarted(daemons) -> None:
    """The server closing the connection (a daemon drained and restarted at
    the same address) leaves the AsyncEnv unusable for good: connect() is a
    no-op while the dead socket is kept, and every later request, reset
    included, raises the old close. A request_timeout, by contrast, drops
    the socket and the next request opens a new session."""
    listen = f"127.0.0.1:{_free_port()}"
    d = daemons.start(listen=listen)

    async def go() -> None:
        env = harnessd.AsyncEnv(d.url)
        try:
            await env.connect()
            await env.reset(episode_id="ep-before")
            d.stop()  # SIGTERM: drained, the connection closed with 1001
            daemons.start(listen=listen)
            try:
                await env.step("reply lost")
            except harnessd.TransportError:
                pass  # expected: the session died with its daemon
            await env.connect()  # a new session at the same address
            obs = await env.reset(episode_id="ep-after")
            assert obs.episode_id == "ep-after"
        finally:
            await env.close()

    asyncio.run(go())
