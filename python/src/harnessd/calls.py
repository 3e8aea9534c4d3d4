"""The gateway's model calls, whole again.

The gateway's ``llm_request`` and ``llm_response`` events carry per call
only what is new (docs/protocol.md, "Calls as deltas"): a response's
``prompt_token_ids`` after its parent call's prompt+completion ids
(``parent_call_index``, ``prompt_token_ids_from``) and a request's
``messages`` after those of the request emitted before it
(``messages_call_index``, ``messages_from``). :class:`CallIDs` keeps an
episode's calls and rebuilds each one's full prompt ids and messages;
:func:`full_calls` does it for a list of events. A reset with
``full_token_ids=True`` gets whole events instead. The training export
always has full chains.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .types import Event

__all__ = ["CallIDs", "MissingBase", "full_calls"]


class MissingBase(ValueError):
    """A delta's base call never arrived (a turn's event bound dropped its
    event): use the export, or reset with ``full_token_ids=True``."""


class CallIDs:
    """An episode's gateway calls, rebuilt from their deltas. Add the
    episode's events in any order (:meth:`add`, :meth:`add_events`); a
    call whose base has not arrived yet waits for it."""

    def __init__(self) -> None:
        self._seq: dict[int, list[int]] = {}  # prompt + completion ids
        self._plen: dict[int, int] = {}
        self._msgs: dict[int, list[Any]] = {}
        self._whole: dict[int, Any] = {}  # messages that are not a list, as they came
        self._wait_ids: dict[int, list[dict[str, Any]]] = {}
        self._wait_msgs: dict[int, list[dict[str, Any]]] = {}

    def add_events(self, events: Iterable[Event]) -> "CallIDs":
        """Add the gateway's ``llm_request`` and ``llm_response`` events
        among ``events``; returns self."""
        for e in events:
            self.add(e)
        return self

    def add(self, e: Event) -> None:
        """Add one event; other kinds and sources are ignored."""
        if e.source != "gateway":
            return
        ci = e.data.get("call_index")
        if not isinstance(ci, int) or ci <= 0:
            return
        if e.type == "llm_response":
            self._add_response(e.data)
        elif e.type == "llm_request":
            self._add_request(e.data)

    def _add_response(self, d: dict[str, Any]) -> None:
        frm = int(d.get("prompt_token_ids_from") or 0)
        if not d.get("prompt_token_ids") and not d.get("completion_token_ids") and frm == 0:
            return
        parent = int(d.get("parent_call_index") or 0)
        if frm > 0 and parent not in self._seq:
            self._wait_ids.setdefault(parent, []).append(d)
            return
        queue = [d]
        while queue:
            d = queue.pop(0)
            frm = int(d.get("prompt_token_ids_from") or 0)
            prompt = list(d.get("prompt_token_ids") or [])
            if frm > 0:
                base = self._seq[int(d["parent_call_index"])]
                if frm > len(base):
                    raise ValueError(f"call {d['call_index']}: prompt_token_ids_from {frm} beyond its parent's {len(base)} ids")
                prompt = base[:frm] + prompt
            ci = int(d["call_index"])
            self._seq[ci] = prompt + list(d.get("completion_token_ids") or [])
            self._plen[ci] = len(prompt)
            queue.extend(self._wait_ids.pop(ci, []))

    def _add_request(self, d: dict[str, Any]) -> None:
        frm = int(d.get("messages_from") or 0)
        base_ci = int(d.get("messages_call_index") or 0)
        if frm > 0 and base_ci not in self._msgs:
            self._wait_msgs.setdefault(base_ci, []).append(d)
            return
        queue = [d]
        while queue:
            d = queue.pop(0)
            ci = int(d["call_index"])
            frm = int(d.get("messages_from") or 0)
            own = d.get("messages")
            if frm > 0:
                base = self._msgs[int(d["messages_call_index"])]
                if frm > len(base) or not isinstance(own, list):
                    raise ValueError(f"call {ci}: messages_from {frm} does not fit its base's {len(base)} messages")
                self._msgs[ci] = base[:frm] + own
            else:
                self._msgs[ci] = list(own) if isinstance(own, list) else []
                if not isinstance(own, list):
                    self._whole[ci] = own
            queue.extend(self._wait_msgs.pop(ci, []))

    def prompt_ids(self, call_index: int) -> list[int]:
        """The call's full prompt ids; KeyError when unknown."""
        return self._seq[call_index][: self._plen[call_index]]

    def completion_ids(self, call_index: int) -> list[int]:
        """The call's completion ids; KeyError when unknown."""
        return self._seq[call_index][self._plen[call_index]:]

    def ids(self, call_index: int) -> list[int]:
        """The call's prompt + completion ids; KeyError when unknown."""
        return list(self._seq[call_index])

    def messages(self, call_index: int) -> Any:
        """The call's whole conversation as the agent sent it; KeyError
        when unknown."""
        if call_index in self._whole:
            return self._whole[call_index]
        return list(self._msgs[call_index])

    def missing(self) -> list[int]:
        """The calls deltas wait for that never arrived."""
        return sorted(set(self._wait_ids) | set(self._wait_msgs))


def full_calls(events: Iterable[Event], *, strict: bool = True) -> dict[int, dict[str, Any]]:
    """call_index -> {"request": llm_request data, "response": llm_response
    data} of the gateway's events, each with its whole ``messages`` and
    ``prompt_token_ids`` rebuilt (and no ``messages_from`` or
    ``prompt_token_ids_from``). Raises :class:`MissingBase` when a delta's
    base is not among ``events``, unless ``strict`` is false: then such a
    call's data stays as it came."""
    evs = list(events)
    c = CallIDs().add_events(evs)
    if strict and c.missing():
        raise MissingBase(f"the events of calls {c.missing()} are not among the events")
    out: dict[int, dict[str, Any]] = {}
    for e in evs:
        if e.source != "gateway" or e.type not in ("llm_request", "llm_response"):
            continue
        ci = e.data.get("call_index")
        if not isinstance(ci, int):
            continue
        d = dict(e.data)
        if e.type == "llm_request":
            if ci in c._msgs:
                d["messages"] = c.messages(ci)
                d.pop("messages_from", None)
            out.setdefault(ci, {})["request"] = d
        else:
            if ci in c._seq:
                d["prompt_token_ids"] = c.prompt_ids(ci)
                d.pop("prompt_token_ids_from", None)
            out.setdefault(ci, {})["response"] = d
    return out
