"""A step the caller cancels (asyncio.wait_for, task.cancel(): how a trainer
drops a slow rollout) must not leave its late reply to be read as the answer
to the session's next request."""

from __future__ import annotations

import asyncio

import harnessd


def test_cancelled_step_does_not_shift_the_replies(daemons) -> None:
    d = daemons.start()

    async def go() -> None:
        async with harnessd.AsyncEnv(d.url) as env:
            await env.reset(episode_id="ep-cancel")
            try:
                await asyncio.wait_for(env.step("reply first;;sleep 2s"), 0.5)
            except asyncio.TimeoutError:
                pass
            # Either the session is ended (a TransportError, as with
            # request_timeout) or the next step answers the next message:
            # never the cancelled step's observation.
            try:
                obs = await env.step("reply second")
            except harnessd.HarnessdError:
                return
            assert obs.response == "second", f"the step answered {obs.response!r}: the cancelled step's late reply"

    asyncio.run(go())
