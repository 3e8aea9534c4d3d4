"""Staleness of samples against the trainer's policy version.

Every model call through a daemon's gateway is stamped with the policy
version it was sent under and the one its answer came back under, and
marked ``straddles_update`` when the version changed while it was in flight
(docs/gateway.md, "Policy versions"); :class:`~harnessd.convert.Sample`
carries them per call. :func:`filter_stale` keeps the samples a trainer at
version ``current_version`` may still learn from, with prime-rl's
``max_off_policy_steps`` rule (PrimeIntellect-ai/prime-rl, the
orchestrator's scheduler: a rollout whose policy is more than
``max_off_policy_steps`` steps behind the trainer's is dropped):

    keep  ⇔  oldest_version >= current_version - max_off_policy_steps

For a sample of several calls (a chain: one per model call of the episode
that extended the same token sequence) ``oldest_version`` is the *oldest*
version any of its calls was sent under: a sample is as stale as its
stalest tokens, and a call straddling an update was sampled (at least in
part) under the version it was sent under, not the newer one it was
answered under. With ``drop_straddling`` a sample with any straddling call
is dropped whatever its age, since its tokens may come from two policies.
A sample newer than the trainer (``oldest_version > current_version``) is
kept: it is not stale.

This module only reads samples; it owns no state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from .convert import Sample

__all__ = ["Dropped", "StalenessResult", "filter_stale", "STALE", "STRADDLES_UPDATE", "NO_CALLS"]

#: Dropped: the oldest call is more than max_off_policy_steps behind.
STALE = "stale"
#: Dropped: a call was in flight across a version change.
STRADDLES_UPDATE = "straddles_update"
#: Dropped: the sample names no model call, so it has no version.
NO_CALLS = "no_calls"


@dataclass(frozen=True)
class Dropped:
    """A sample :func:`filter_stale` left out: the ``sample``, the
    ``reason`` (:data:`STALE`, :data:`STRADDLES_UPDATE` or
    :data:`NO_CALLS`), and ``off_policy_steps``, ``current_version`` minus
    the sample's oldest version (None without calls)."""

    sample: Sample
    reason: str
    off_policy_steps: int | None

    @property
    def detail(self) -> str:
        """A sentence saying why."""
        s = self.sample
        where = f"episode {s.episode_id!r} chain {s.chain_id}"
        if self.reason == STRADDLES_UPDATE:
            return f"{where}: call(s) {s.straddling_calls} in flight across a policy version change"
        if self.reason == NO_CALLS:
            return f"{where}: no model call, so no policy version"
        return f"{where}: oldest call sent under version {s.oldest_policy_version}, {self.off_policy_steps} steps behind"


class StalenessResult(NamedTuple):
    """What :func:`filter_stale` returns: ``kept`` samples (in their
    order) and ``dropped`` ones with their reasons; unpack it as ``kept,
    dropped = filter_stale(...)``."""

    kept: list[Sample]
    dropped: list[Dropped]


def filter_stale(samples: Iterable[Sample], current_version: int, max_off_policy_steps: int, *, drop_straddling: bool = True) -> StalenessResult:
    """Split ``samples`` into those a trainer at policy version
    ``current_version`` keeps and those it drops, by the rule of this
    module's doc: a sample is kept when its oldest call's version sent is
    at least ``current_version - max_off_policy_steps`` (0 keeps only
    samples of the current version); with ``drop_straddling`` (default) a
    sample with a call that straddled an update is dropped first, reason
    :data:`STRADDLES_UPDATE`. A sample without calls is dropped
    (:data:`NO_CALLS`). Raises ValueError for a negative
    ``max_off_policy_steps`` or ``current_version``."""
    if max_off_policy_steps < 0:
        raise ValueError(f"max_off_policy_steps is >= 0, not {max_off_policy_steps}")
    if current_version < 0:
        raise ValueError(f"current_version is >= 0, not {current_version}")
    kept: list[Sample] = []
    dropped: list[Dropped] = []
    for s in samples:
        oldest = s.oldest_policy_version
        if oldest is None:
            dropped.append(Dropped(s, NO_CALLS, None))
            continue
        steps = current_version - oldest
        if drop_straddling and s.straddles_update:
            dropped.append(Dropped(s, STRADDLES_UPDATE, steps))
        elif steps > max_off_policy_steps:
            dropped.append(Dropped(s, STALE, steps))
        else:
            kept.append(s)
    return StalenessResult(kept, dropped)
