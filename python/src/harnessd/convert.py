"""From the training export to the samples trainers consume.

The export (``harnessd.gateway.export/v1``, docs/gateway.md) holds an
episode's *chains*: token sequences whose ``input_ids`` are the engine's
ids, exactly, with a ``loss_mask`` (1 on sampled tokens) and the behaviour
``logprobs`` beside them. :func:`samples_from_export` turns each chain into a
:class:`Sample` — prompt ids, completion ids, loss mask, logprobs, reward —
and the other converters give the trainers' own shapes:

- :func:`to_skyrl`: SkyRL's ``GeneratorOutput`` (``skyrl_train.generators.
  base``, NovaSky-AI/SkyRL at commit 297e4672f25811d32f0f73b2bbfad125482d754e);
- :func:`to_verifiers`: verifiers' ``RolloutOutput`` plus its ``trajectory``
  of ``TrajectoryStep`` with ``TrajectoryStepTokens`` (``verifiers/types.py``,
  PrimeIntellect-ai/verifiers at commit 005b15f2e2c48a13c5f230d817536acf29e90110);
- :func:`to_trl`: the dict TRL's ``GRPOTrainer`` wants back from a
  ``rollout_func`` (``trl/trainer/grpo_trainer.py``, huggingface/trl
  v1.9.0-26-gf2cd5771, commit f2cd57710ae345ea6428ae95363267fcf38a3dc8).

None of those packages is imported: the shapes are plain dicts and lists
(the ids a trainer turns into tensors itself). Nothing here re-tokenizes:
every id is the engine's.

A fork's sibling (docs/fork.md, :class:`harnessd.ForkGroup`) exports the
parent's calls as its own prefix, marked ``inherited`` on the calls and on
their chain spans; the gateway leaves their loss mask as sampled (1). The
converters take ``inherited`` (:data:`INHERITED_MODES`): ``"mask"`` (the
default) trains none of an inherited span's tokens (loss mask 0, logprob
0.0), so G siblings do not train the shared prefix G times; ``"prompt"``
masks them too and moves the chain's leading inherited tokens into
``prompt_ids``, so the completion is the sibling's own continuation;
``"train"`` keeps the export's mask (the prefix's sampled tokens trained in
every sibling). An export without inherited calls converts the same in
every mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .calls import full_calls
from .rollout import EpisodeResult, GroupResult, Trajectory

__all__ = [
    "EXPORT_FORMAT",
    "INHERITED_MODES",
    "Sample",
    "samples_from_export",
    "samples_from_group",
    "SkyRLTrajectoryID",
    "to_skyrl",
    "to_verifiers",
    "to_trl",
    "trl_reward",
]

#: The export format these converters read.
EXPORT_FORMAT = "harnessd.gateway.export/v1"

#: What the converters do with a fork's inherited calls (see the module
#: doc): ``"mask"``, ``"prompt"`` or ``"train"``.
INHERITED_MODES = ("mask", "prompt", "train")


@dataclass
class Sample:
    """One trainable sequence: a chain of an episode's export.

    ``prompt_ids + completion_ids`` is the chain's ``input_ids``;
    ``completion_ids`` starts at its first sampled token (``prompt_length``)
    and holds every later token — the sampled spans and what came between
    them (tool results, later user turns), which ``loss_mask`` (aligned with
    ``completion_ids``) marks 0. ``logprobs`` is aligned with
    ``completion_ids``: the behaviour logprob where the mask is 1, 0.0 where
    it is 0 (TRL's convention for tokens not sampled). ``reward`` is the
    episode's. ``group`` and ``index`` place it in a group rollout (the
    task, and the episode's index in the group).

    The policy versions are per call of the chain (aligned with
    ``calls``): ``policy_versions_sent`` the version when the call went to
    the engine, ``policy_versions`` when its answer came back;
    ``straddling_calls`` the calls exported ``straddles_update`` (the
    version changed while they were in flight). ``sampling_pinned`` says
    every call of the chain was sent under a sampling pin, and
    ``sampling_differs_calls`` lists the calls whose sampling sent was not
    exactly the pin (the export's ``sampling_differs``). See
    :func:`harnessd.policy.filter_stale`.

    ``inherited_calls`` are the chain's calls inherited from a fork's
    parent (empty for an episode not forked); whether their tokens are
    trained is the converter's ``inherited`` mode.

    ``error_type`` is the episode's failure (``turn_timeout``,
    ``harness_crashed``, ``episode_timeout``, …; docs/protocol.md), ``""``
    for an episode that ended normally or was stopped by the policy. A
    failed episode's reward is what its turns scored before the failure
    (its last observation's reward is None: no rubric ran), not a
    judgement of the whole episode; :func:`samples_from_group` can leave
    failed episodes out (``failed="drop"``).
    """

    episode_id: str
    chain_id: int
    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    reward: float
    calls: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    branch_of: int = 0
    finish_reason: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    group: str = ""
    index: int = 0
    policy_versions_sent: list[int] = field(default_factory=list)
    policy_versions: list[int] = field(default_factory=list)
    straddling_calls: list[int] = field(default_factory=list)
    sampling_pinned: bool = False
    sampling_differs_calls: list[int] = field(default_factory=list)
    inherited_calls: list[int] = field(default_factory=list)
    error_type: str = ""

    @property
    def failed(self) -> bool:
        """The episode ended in a failure (``error_type`` is set)."""
        return bool(self.error_type)

    @property
    def oldest_policy_version(self) -> int | None:
        """The oldest version any call of the chain was sent under (None
        for a chain without calls): the version the staleness filter
        judges the sample by."""
        return min(self.policy_versions_sent) if self.policy_versions_sent else None

    @property
    def straddles_update(self) -> bool:
        """Some call of the chain was in flight across a version change."""
        return bool(self.straddling_calls)

    @property
    def input_ids(self) -> list[int]:
        """The whole sequence: the chain's ``input_ids``."""
        return self.prompt_ids + self.completion_ids

    @property
    def truncated(self) -> bool:
        """The chain's last call stopped at its token limit."""
        return self.finish_reason == "length"


def _fatal_chains(export: dict[str, Any]) -> set[int]:
    bad: set[int] = set()
    call_chain = {c.get("call_index"): c.get("chain") for c in export.get("calls", []) if isinstance(c, dict)}
    for iss in export.get("issues", []) or []:
        if not isinstance(iss, dict) or iss.get("severity") != "fatal":
            continue
        ch = iss.get("chain") or call_chain.get(iss.get("call_index"))
        if isinstance(ch, int) and ch:
            bad.add(ch)
    return bad


def export_reward(export: dict[str, Any]) -> float:
    """The episode's return in the export: the sum of its turns' rewards
    (0.0 when no turn was scored)."""
    return float(sum(float(r.get("reward") or 0.0) for r in export.get("rewards", []) or [] if isinstance(r, dict)))


def _check_inherited(inherited: str) -> None:
    if inherited not in INHERITED_MODES:
        raise ValueError(f"inherited is one of {INHERITED_MODES}, not {inherited!r}")


def samples_from_export(export: dict[str, Any], reward: float | None = None, *, drop_fatal: bool = True, group: str = "", index: int = 0,
                        inherited: str = "mask", error_type: str = "") -> list[Sample]:
    """One :class:`Sample` per chain of ``export``, in chain order.

    ``reward`` (default: :func:`export_reward`, the sum of the turns'
    rewards) is given to every sample of the episode. With ``drop_fatal`` a
    chain a ``fatal`` issue names (directly or through one of its calls) is
    left out. ``inherited`` says what becomes of a fork's inherited
    spans (:data:`INHERITED_MODES`, the module doc). ``error_type`` is the
    episode's failure as the caller saw it (the export does not say; see
    :attr:`Sample.error_type`). Raises ValueError for an export of another
    format, or a chain whose arrays do not line up."""
    _check_inherited(inherited)
    if export.get("format") != EXPORT_FORMAT:
        raise ValueError(f"not a {EXPORT_FORMAT} export: format {export.get('format')!r}")
    r = export_reward(export) if reward is None else float(reward)
    bad = _fatal_chains(export) if drop_fatal else set()
    finish = {c.get("call_index"): c.get("finish_reason", "") for c in export.get("calls", []) if isinstance(c, dict)}
    by_call = {c.get("call_index"): c for c in export.get("calls", []) if isinstance(c, dict)}
    out: list[Sample] = []
    for ch in export.get("chains", []) or []:
        cid = int(ch.get("id", 0))
        if cid in bad:
            continue
        ids = [int(x) for x in ch.get("input_ids", [])]
        mask = [int(x) for x in ch.get("loss_mask", [])]
        lps = ch.get("logprobs", [])
        n = len(ids)
        if len(mask) != n or len(lps) != n:
            raise ValueError(f"chain {cid} of {export.get('episode_id')!r}: input_ids, loss_mask and logprobs differ in length ({n}, {len(mask)}, {len(lps)})")
        p = int(ch.get("prompt_length", 0))
        if not 0 <= p <= n:
            raise ValueError(f"chain {cid}: prompt_length {p} outside its {n} tokens")
        spans = [dict(s) for s in ch.get("spans", []) if isinstance(s, dict)]
        if inherited != "train":
            for sp in spans:
                if sp.get("inherited"):
                    a, b = max(0, int(sp.get("start", 0))), min(n, int(sp.get("end", 0)))
                    mask[a:b] = [0] * max(0, b - a)
        if inherited == "prompt":
            # The chain's leading run of inherited spans is the prompt.
            for sp in sorted(spans, key=lambda x: int(x.get("start", 0))):
                if not sp.get("inherited") or int(sp.get("start", 0)) > p:
                    break
                p = max(p, min(n, int(sp.get("end", 0))))
        comp_lps: list[float] = []
        for i in range(p, n):
            lp = lps[i]
            if mask[i]:
                if not isinstance(lp, (int, float)):
                    raise ValueError(f"chain {cid}: token {i} is trained on but has no logprob")
                comp_lps.append(float(lp))
            else:
                comp_lps.append(0.0)
        calls = [int(c) for c in ch.get("calls", [])]
        cinfo = [by_call.get(c, {}) for c in calls]
        turns = sorted({int(s.get("turn", 0)) for s in spans if s.get("kind") == "completion"})
        out.append(Sample(
            episode_id=str(export.get("episode_id", "")), chain_id=cid,
            prompt_ids=ids[:p], completion_ids=ids[p:], loss_mask=mask[p:], logprobs=comp_lps, reward=r,
            calls=calls, turns=turns, branch_of=int(ch.get("branch_of", 0) or 0),
            finish_reason=str(finish.get(calls[-1], "") if calls else ""), spans=spans, group=group, index=index,
            # Versions are 0 until a trainer sets one (docs/protocol.md).
            policy_versions_sent=[int(c.get("policy_version_sent") or 0) for c in cinfo],
            policy_versions=[int(c.get("policy_version") or 0) for c in cinfo],
            straddling_calls=[ci for ci, c in zip(calls, cinfo) if c.get("straddles_update")],
            sampling_pinned=bool(cinfo) and all(bool(c.get("sampling_pinned")) for c in cinfo),
            sampling_differs_calls=[ci for ci, c in zip(calls, cinfo) if c.get("sampling_differs")],
            inherited_calls=[ci for ci, c in zip(calls, cinfo) if c.get("inherited")],
            error_type=error_type,
        ))
    return out


def samples_from_group(group: GroupResult, *, reward: str = "export", drop_fatal: bool = True, inherited: str = "mask",
                       failed: str = "keep") -> list[Sample]:
    """The samples of every episode of ``group`` that has an export, each
    tagged with the group (its task, else its id), the episode's index and
    its failure (:attr:`Sample.error_type`). ``reward`` is ``"export"``
    (the export's sum of turn rewards) or ``"final"`` (the episode's last
    observation reward, 0.0 when None — which a failure's is).
    ``failed`` is ``"keep"`` (every episode, a failed one marked by its
    ``error_type``: a group keeps its size) or ``"drop"`` (an episode that
    ended in a failure — a timeout, a crash — is left out, so that a
    failure of the harness or the infrastructure is not trained as the
    policy's low reward). ``inherited`` is :func:`samples_from_export`'s
    (a :class:`~harnessd.ForkGroup`'s siblings share the parent's
    prefix)."""
    if reward not in ("export", "final"):
        raise ValueError("reward is 'export' or 'final'")
    if failed not in ("keep", "drop"):
        raise ValueError("failed is 'keep' or 'drop'")
    out: list[Sample] = []
    for ep in group.episodes:
        if ep.export is None:
            continue
        err = ep.trajectory.error_type if ep.trajectory is not None else ""
        if err and failed == "drop":
            continue
        r = None if reward == "export" else float(ep.reward or 0.0)
        out.extend(samples_from_export(ep.export, r, drop_fatal=drop_fatal, group=group.task or group.group_id, index=ep.index,
                                       inherited=inherited, error_type=err))
    return out


@dataclass(frozen=True)
class SkyRLTrajectoryID:
    """SkyRL's ``TrajectoryID`` (a dataclass of ``instance_id: str`` and
    ``repetition_id: int``), for when ``skyrl_train`` is not installed; when
    it is, :func:`to_skyrl` builds SkyRL's own."""

    instance_id: str
    repetition_id: int

    def to_string(self) -> str:
        """``{instance_id}_{repetition_id}``, as SkyRL's does."""
        return f"{self.instance_id}_{self.repetition_id}"


def _skyrl_trajectory_id_class() -> Any:
    try:
        from skyrl_train.generators.base import TrajectoryID  # type: ignore[import]
    except ImportError:
        return SkyRLTrajectoryID
    return TrajectoryID


def to_skyrl(samples: Sequence[Sample], *, rollout_metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """SkyRL's ``GeneratorOutput`` for ``samples`` (one entry each).

    ``prompt_token_ids`` and ``response_ids`` are the sample's prompt and
    completion ids; ``loss_masks`` and ``rollout_logprobs`` are aligned with
    ``response_ids``; ``rewards`` one float per sample (sequence-level);
    ``stop_reasons`` the chain's last finish reason; ``trajectory_ids``
    ``TrajectoryID(instance_id=group, repetition_id=index)``;
    ``rollout_metrics`` what the caller gives plus harnessd's counts (and
    the batch's oldest and newest policy version, samples straddling an
    update, samples not pinned: ``GeneratorOutput`` has no per-sample
    place for them);
    ``is_last_step`` and ``sampling_masks`` (step-wise training, top-k
    sampling masks) None."""
    tid = _skyrl_trajectory_id_class()
    rewards = [float(s.reward) for s in samples]
    metrics: dict[str, Any] = {
        "harnessd/samples": len(samples),
        "harnessd/episodes": len({s.episode_id for s in samples}),
        "harnessd/mean_reward": (sum(rewards) / len(rewards)) if rewards else 0.0,
        "harnessd/trained_tokens": sum(sum(s.loss_mask) for s in samples),
        # GeneratorOutput has no per-trajectory field for versions: the
        # batch's range and counts go in its metrics.
        "harnessd/min_policy_version": min((v for s in samples if (v := s.oldest_policy_version) is not None), default=0),
        "harnessd/max_policy_version": max((max(s.policy_versions) for s in samples if s.policy_versions), default=0),
        "harnessd/straddling_samples": sum(1 for s in samples if s.straddles_update),
        "harnessd/unpinned_samples": sum(1 for s in samples if not s.sampling_pinned),
    }
    metrics.update(rollout_metrics or {})
    return {
        "prompt_token_ids": [list(s.prompt_ids) for s in samples],
        "response_ids": [list(s.completion_ids) for s in samples],
        "rewards": rewards,
        "loss_masks": [list(s.loss_mask) for s in samples],
        "stop_reasons": [s.finish_reason or "stop" for s in samples],
        "rollout_metrics": metrics,
        "rollout_logprobs": [list(s.logprobs) for s in samples],
        "trajectory_ids": [tid(instance_id=s.group or s.episode_id, repetition_id=s.index) for s in samples],
        "is_last_step": None,
        "sampling_masks": None,
    }


def _gateway_calls(traj: Trajectory) -> dict[int, dict[str, Any]]:
    """call_index -> {"request": llm_request data, "response": llm_response
    data} from the trajectory's gateway events, each whole again
    (:func:`harnessd.calls.full_calls`)."""
    return full_calls((ev for t in traj.turns for ev in t.observation.events), strict=False)


def _assistant(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "assistant", "content": content}]
    return [{"role": "assistant", "content": content if content is not None else ""}]


def to_verifiers(result: EpisodeResult, *, example_id: int = 0, task: str | None = None, answer: str = "", info: dict[str, Any] | None = None, drop_fatal: bool = True,
                 inherited: str = "mask") -> dict[str, Any]:
    """verifiers' ``RolloutOutput`` for one episode, with its
    ``trajectory`` (a list of ``TrajectoryStep``, one per chained model
    call, as verifiers' ``State`` holds it) so a prime-rl style trainer can
    read the tokens.

    ``prompt`` is the first turn's user message and ``completion`` the
    conversation after it (each turn's response, then the next message), as
    chat messages. Each step's ``tokens`` is a ``TrajectoryStepTokens``:
    the call's prompt ids (``input_ids`` before its completion span) with
    ``prompt_mask`` 0, its sampled ids with ``completion_mask`` 1, and their
    logprobs (verifiers' ``parse_response_tokens`` convention); its
    ``prompt`` and ``completion`` are the messages the gateway saw; its
    ``extras`` (verifiers' free-form dict) carry the call's
    ``policy_version_sent``, ``policy_version``, ``straddles_update`` and
    ``sampling_pinned`` (and ``inherited``). A fork's sibling has a step
    for each of its parent's calls only with ``inherited="train"`` (its
    trajectory's prompt and completion hold the parent's turns in every
    mode: they are the sibling's conversation). Raises
    ValueError for an episode without a trajectory or an export."""
    _check_inherited(inherited)
    traj, ex = result.trajectory, result.export
    if traj is None or ex is None:
        raise ValueError(f"episode {result.index} has no trajectory or no export")
    samples = samples_from_export(ex, drop_fatal=drop_fatal, inherited="train")
    reward = samples[0].reward if samples else float(traj.reward or 0.0)
    gw = _gateway_calls(traj)
    chains = {int(c.get("id", 0)): c for c in ex.get("chains", [])}
    finish = {c.get("call_index"): c.get("finish_reason", "") for c in ex.get("calls", []) if isinstance(c, dict)}
    xcalls: dict[Any, dict[str, Any]] = {c.get("call_index"): c for c in ex.get("calls", []) if isinstance(c, dict)}
    steps: list[dict[str, Any]] = []
    for s in samples:
        ids = chains[s.chain_id]["input_ids"]
        lps = chains[s.chain_id]["logprobs"]
        for sp in s.spans:
            if sp.get("kind") != "completion" or (sp.get("inherited") and inherited != "train"):
                continue
            a, b, ci = int(sp["start"]), int(sp["end"]), int(sp["call_index"])
            call = gw.get(ci, {})
            req, resp = call.get("request", {}), call.get("response", {})
            xc = xcalls.get(ci, {})
            truncated = finish.get(ci) == "length"
            steps.append({
                "prompt": list(req.get("messages") or []),
                "completion": _assistant(resp.get("content")),
                "response": None,
                "tokens": {
                    "prompt_ids": [int(x) for x in ids[:a]],
                    "prompt_mask": [0] * a,
                    "completion_ids": [int(x) for x in ids[a:b]],
                    "completion_mask": [1] * (b - a),
                    "completion_logprobs": [float(x) for x in lps[a:b]],
                    "overlong_prompt": False,
                    "is_truncated": truncated,
                },
                "reward": None,
                "advantage": None,
                "is_truncated": truncated,
                "trajectory_id": f"{s.episode_id}/chain-{s.chain_id}",
                "extras": {"call_index": ci, "turn": int(sp.get("turn", 0)), "chain": s.chain_id, "episode_id": s.episode_id,
                           "policy_version_sent": int(xc.get("policy_version_sent") or 0), "policy_version": int(xc.get("policy_version") or 0),
                           "straddles_update": bool(xc.get("straddles_update")), "sampling_pinned": bool(xc.get("sampling_pinned")),
                           "inherited": bool(xc.get("inherited"))},
            })
    prompt: list[dict[str, Any]] = []
    completion: list[dict[str, Any]] = []
    for i, t in enumerate(traj.turns):
        (prompt if i == 0 else completion).append({"role": "user", "content": t.message})
        completion.append({"role": "assistant", "content": t.observation.response or ""})
    last = traj.last
    md: dict[str, Any] = {"episode_id": traj.episode_id, "daemon": traj.daemon}
    if last.error_type:
        md["error_type"], md["error"] = last.error_type, last.error
    md.update(info or {})
    stop = "done" if last.done and not last.error_type else (last.error_type or "policy_stopped")
    return {
        "example_id": example_id,
        "prompt": prompt,
        "completion": completion,
        "answer": answer,
        "task": task if task is not None else (traj.task or ""),
        "info": md,
        "tools": None,
        "reward": reward,
        "metrics": {"turns": float(len(traj.turns)), "model_calls": float(len(steps))},
        "stop_condition": stop,
        "is_truncated": any(st["is_truncated"] for st in steps),
        "timing": {},
        "error": None,
        "trajectory": steps,
    }


def to_trl(samples: Iterable[Sample]) -> dict[str, list[Any]]:
    """What TRL's ``GRPOTrainer`` wants back from a ``rollout_func``:
    ``prompt_ids``, ``completion_ids`` and ``logprobs`` (one list per
    sample, ``logprobs`` aligned with ``completion_ids``), and ``env_mask``
    (1 on the model's tokens, 0 on the environment's: the loss mask), which
    TRL uses as its ``tool_mask``. Every other key is forwarded by TRL to
    the reward functions: ``harnessd_reward`` (the sample's reward, read by
    :func:`trl_reward`), ``episode_id``, ``chain_id``, ``policy_version``
    (the sample's oldest call's version sent), ``straddles_update`` and
    ``error_type`` (the episode's failure, ``""`` for none)."""
    ss = list(samples)
    return {
        "prompt_ids": [list(s.prompt_ids) for s in ss],
        "completion_ids": [list(s.completion_ids) for s in ss],
        "logprobs": [list(s.logprobs) for s in ss],
        "env_mask": [list(s.loss_mask) for s in ss],
        "harnessd_reward": [float(s.reward) for s in ss],
        "episode_id": [s.episode_id for s in ss],
        "chain_id": [s.chain_id for s in ss],
        "policy_version": [s.oldest_policy_version for s in ss],
        "straddles_update": [s.straddles_update for s in ss],
        "error_type": [s.error_type for s in ss],
    }


def trl_reward(prompts: Any = None, completions: Any = None, harnessd_reward: Sequence[float] | None = None, **kwargs: Any) -> list[float]:
    """A TRL reward function giving the environment's reward that
    :func:`to_trl` forwarded (``reward_funcs=[harnessd.convert.trl_reward]``)."""
    if harnessd_reward is None:
        raise ValueError("no harnessd_reward: the rollout_func must return harnessd.convert.to_trl's dict")
    return [float(r) for r in harnessd_reward]
