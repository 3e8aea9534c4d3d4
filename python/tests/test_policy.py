"""The staleness filter's own rule (harnessd.policy.filter_stale), and the
per-call policy version fields of an export carried into samples and the
converters. No daemon: samples and exports written here."""

from __future__ import annotations

from typing import Any

import pytest

import harnessd
from harnessd import convert
from harnessd.policy import NO_CALLS, STALE, STRADDLES_UPDATE, filter_stale


def sample(name: str, sent: list[int], answered: list[int] | None = None, straddling: list[int] | None = None) -> convert.Sample:
    calls = list(range(1, len(sent) + 1))
    return convert.Sample(
        episode_id=name, chain_id=1, prompt_ids=[1], completion_ids=[2], loss_mask=[1], logprobs=[-0.5], reward=0.0,
        calls=calls, policy_versions_sent=list(sent), policy_versions=list(answered if answered is not None else sent),
        straddling_calls=list(straddling or []),
    )


def names(ss: list[convert.Sample]) -> list[str]:
    return [s.episode_id for s in ss]


def test_the_boundary_is_inclusive() -> None:
    # Trainer at 10, max 2: version 8 is exactly 2 steps behind and kept;
    # 7 is 3 behind and dropped. An off-by-one either way fails one of them.
    ss = [sample("v10", [10]), sample("v8", [8]), sample("v7", [7]), sample("v11", [11])]
    kept, dropped = filter_stale(ss, 10, 2)
    assert names(kept) == ["v10", "v8", "v11"]  # a version ahead of the trainer is not stale
    assert [(d.sample.episode_id, d.reason, d.off_policy_steps) for d in dropped] == [("v7", STALE, 3)]
    assert "3 steps behind" in dropped[0].detail


def test_zero_keeps_only_the_current_version() -> None:
    kept, dropped = filter_stale([sample("on", [5]), sample("off", [4])], 5, 0)
    assert names(kept) == ["on"] and names([d.sample for d in dropped]) == ["off"]


def test_a_multi_call_sample_is_as_old_as_its_oldest_call() -> None:
    # Calls sent under 6 then 9: judged by 6, not by the newest (9) nor the
    # last (9) — with max 2 at version 9 it is 3 steps behind.
    s = sample("mixed", [6, 9])
    assert s.oldest_policy_version == 6
    kept, dropped = filter_stale([s], 9, 2)
    assert not kept and dropped[0].reason == STALE and dropped[0].off_policy_steps == 3
    kept, dropped = filter_stale([s], 9, 3)
    assert names(kept) == ["mixed"] and not dropped


def test_straddling_is_judged_by_the_version_sent() -> None:
    # Sent under 3, answered under 4: with drop_straddling off it is as old
    # as 3 (the version it was sent under), not 4.
    s = sample("str", [3, 4], [4, 4], straddling=[1])
    assert s.straddles_update
    kept, dropped = filter_stale([s], 4, 1)
    assert not kept and dropped[0].reason == STRADDLES_UPDATE and dropped[0].off_policy_steps == 1
    assert "[1]" in dropped[0].detail
    kept, dropped = filter_stale([s], 4, 1, drop_straddling=False)
    assert names(kept) == ["str"]
    kept, dropped = filter_stale([s], 4, 0, drop_straddling=False)
    assert not kept and dropped[0].reason == STALE


def test_no_calls_and_bad_arguments() -> None:
    s = convert.Sample(episode_id="none", chain_id=1, prompt_ids=[], completion_ids=[], loss_mask=[], logprobs=[], reward=0.0)
    assert s.oldest_policy_version is None
    kept, dropped = filter_stale([s], 0, 5)
    assert not kept and dropped[0].reason == NO_CALLS and dropped[0].off_policy_steps is None
    with pytest.raises(ValueError):
        filter_stale([], 1, -1)
    with pytest.raises(ValueError):
        filter_stale([], -1, 1)
    # The top-level names are the module's.
    assert harnessd.filter_stale is filter_stale


def export_with_versions() -> dict[str, Any]:
    """An export of two calls in one chain: the first sent under 3 and
    answered under 4 (straddling), the second under 4, both pinned, the
    second with a max_tokens lowered by a budget."""
    return {
        "format": convert.EXPORT_FORMAT, "episode_id": "ep", "policy_version": 4,
        "pinned_sampling": {"temperature": 1.0, "seed": 7},
        "calls": [
            {"call_index": 1, "turn": 1, "chain": 1, "finish_reason": "stop", "policy_version_sent": 3, "policy_version": 4,
             "straddles_update": True, "sampling_pinned": True},
            {"call_index": 2, "turn": 2, "chain": 1, "finish_reason": "stop", "policy_version_sent": 4, "policy_version": 4,
             "sampling_pinned": True, "sampling_differs": ["max_tokens"]},
        ],
        "chains": [{"id": 1, "calls": [1, 2], "prompt_length": 1, "input_ids": [10, 11, 12, 13], "loss_mask": [0, 1, 0, 1],
                    "logprobs": [None, -0.5, None, -0.25],
                    "spans": [{"kind": "completion", "start": 1, "end": 2, "call_index": 1, "turn": 1},
                              {"kind": "completion", "start": 3, "end": 4, "call_index": 2, "turn": 2}]}],
        "rewards": [{"turn": 1, "reward": 0.0}, {"turn": 2, "reward": 1.0}],
    }


def test_samples_carry_the_versions_per_call() -> None:
    [s] = convert.samples_from_export(export_with_versions())
    assert s.calls == [1, 2]
    assert s.policy_versions_sent == [3, 4] and s.policy_versions == [4, 4]
    assert s.straddling_calls == [1] and s.straddles_update and s.oldest_policy_version == 3
    assert s.sampling_pinned and s.sampling_differs_calls == [2]
    # One call not pinned makes the sample not pinned.
    ex = export_with_versions()
    del ex["calls"][1]["sampling_pinned"]
    [u] = convert.samples_from_export(ex)
    assert not u.sampling_pinned


def test_the_converters_carry_the_versions() -> None:
    [s] = convert.samples_from_export(export_with_versions())
    trl = convert.to_trl([s])
    assert trl["policy_version"] == [3] and trl["straddles_update"] == [True]
    m = convert.to_skyrl([s])["rollout_metrics"]
    assert m["harnessd/min_policy_version"] == 3 and m["harnessd/max_policy_version"] == 4
    assert m["harnessd/straddling_samples"] == 1 and m["harnessd/unpinned_samples"] == 0
