"""The converters' output checked field by field against each format's
definition, on exports of real episodes (fake engine behind real daemons).

The definitions below are transcribed from each project's source (field
names and types as written there), at the commit the converters follow:

- SkyRL: skyrl-train/skyrl_train/generators/base.py, NovaSky-AI/SkyRL
  297e4672f25811d32f0f73b2bbfad125482d754e (GeneratorOutput, TrajectoryID);
- verifiers: verifiers/types.py, PrimeIntellect-ai/verifiers
  005b15f2e2c48a13c5f230d817536acf29e90110 (RolloutOutput, TrajectoryStep,
  TrajectoryStepTokens, RolloutTiming); prompt_mask 0 and completion_mask 1
  as verifiers' parse_response_tokens sets them;
- TRL: trl/trainer/grpo_trainer.py, huggingface/trl
  f2cd57710ae345ea6428ae95363267fcf38a3dc8 (v1.9.0-26): a rollout_func
  returns a dict with the required keys {"prompt_ids", "completion_ids",
  "logprobs"}; "env_mask" is popped as the tool mask (1 model tokens, 0
  environment tokens; environment tokens carry logprob 0.0, as its own tool
  loop appends them); every other key goes to the reward functions.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import typing
from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

import pytest

import harnessd
from harnessd import convert
from harnessd.rollout import Trajectory

# --- SkyRL (NovaSky-AI/SkyRL@297e4672) ------------------------------------


@dataclasses.dataclass
class SkyRLTrajectoryID:
    instance_id: str
    repetition_id: int


class SkyRLGeneratorOutput(TypedDict):
    prompt_token_ids: List[List[int]]
    response_ids: List[List[int]]
    rewards: Union[List[float], List[List[float]]]
    loss_masks: List[List[int]]
    stop_reasons: Optional[List[str]]
    rollout_metrics: Optional[Dict[str, Any]]
    rollout_logprobs: Optional[List[List[float]]]
    trajectory_ids: Optional[List[SkyRLTrajectoryID]]
    is_last_step: Optional[List[bool]]
    sampling_masks: Optional[List[List[List[int]]]]


# --- verifiers (PrimeIntellect-ai/verifiers@005b15f2) ---------------------

ChatMessage = Dict[str, Any]  # openai's ChatCompletionMessageParam: a dict with "role"
Messages = Union[str, List[ChatMessage]]


class TrajectoryStepTokens(TypedDict):
    prompt_ids: list[int]
    prompt_mask: list[int]
    completion_ids: list[int]
    completion_mask: list[int]
    completion_logprobs: list[float]
    overlong_prompt: bool
    is_truncated: bool


class TrajectoryStep(TypedDict):
    prompt: Messages
    completion: Messages
    response: Optional[Any]  # ModelResponse = Completion | ChatCompletion | None
    tokens: Optional[TrajectoryStepTokens]
    reward: Optional[float]
    advantage: Optional[float]
    is_truncated: bool
    trajectory_id: str
    extras: dict[str, Any]


class RolloutTiming(TypedDict, total=False):
    start_time: float
    generation_ms: float
    scoring_ms: float
    total_ms: float


class RolloutOutput(TypedDict):
    example_id: int
    prompt: Messages
    completion: Messages
    answer: str
    task: str
    info: dict[str, Any]
    tools: Optional[list[dict[str, Any]]]
    reward: float
    metrics: dict[str, float]
    stop_condition: Optional[str]
    is_truncated: bool
    timing: RolloutTiming
    error: Optional[Any]  # verifiers.errors.Error | None


# --- TRL (huggingface/trl@f2cd5771) ----------------------------------------

TRL_REQUIRED = {"prompt_ids", "completion_ids", "logprobs"}


def conforms(v: Any, t: Any, where: str) -> None:
    """Fail unless value v is of type t (the typing forms used above)."""
    origin = typing.get_origin(t)
    if t is Any:
        return
    if origin is Union:
        errs = []
        for a in typing.get_args(t):
            try:
                conforms(v, a, where)
                return
            except AssertionError as e:
                errs.append(str(e))
        raise AssertionError(f"{where}: {v!r:.80} matches none of {t}: {errs}")
    if t is type(None):
        assert v is None, f"{where}: {v!r:.80} is not None"
        return
    if origin in (list, List):
        assert isinstance(v, list), f"{where}: {type(v).__name__} is not a list"
        (a,) = typing.get_args(t)
        for i, x in enumerate(v):
            conforms(x, a, f"{where}[{i}]")
        return
    if origin in (dict, Dict):
        assert isinstance(v, dict), f"{where}: {type(v).__name__} is not a dict"
        k, a = typing.get_args(t)
        for kk, x in v.items():
            conforms(kk, k, f"{where} key")
            conforms(x, a, f"{where}[{kk!r}]")
        return
    if origin is Literal:
        assert v in typing.get_args(t), f"{where}: {v!r} not in {t}"
        return
    if isinstance(t, type) and typing.is_typeddict(t):
        check_typeddict(v, t, where)
        return
    if dataclasses.is_dataclass(t):
        for f in dataclasses.fields(t):
            assert hasattr(v, f.name), f"{where}: no field {f.name}"
            conforms(getattr(v, f.name), f.type if not isinstance(f.type, str) else eval(f.type), f"{where}.{f.name}")
        return
    if t is float:
        assert isinstance(v, (int, float)) and not isinstance(v, bool), f"{where}: {v!r} is not a float"
        return
    if t is int:
        assert isinstance(v, int) and not isinstance(v, bool), f"{where}: {v!r} is not an int"
        return
    assert isinstance(v, t), f"{where}: {type(v).__name__} is not {t.__name__}"


def check_typeddict(v: Any, td: Any, where: str) -> None:
    """Every key of TypedDict td (its required ones when total=False
    allows fewer), no other, each of its type."""
    assert isinstance(v, dict), f"{where}: not a dict"
    hints = typing.get_type_hints(td)
    required = td.__required_keys__
    missing = set(required) - set(v)
    extra = set(v) - set(hints)
    assert not missing, f"{where}: missing {sorted(missing)}"
    assert not extra, f"{where}: keys not in {td.__name__}: {sorted(extra)}"
    for k, x in v.items():
        conforms(x, hints[k], f"{where}.{k}")


def policy(obs: harnessd.Observation, traj: Trajectory) -> str | None:
    """Two model calls across two turns (the second turn's prompt adds the
    user message: tokens the loss mask leaves out), then the answer."""
    return ["llm what is 2+3", "llm and 2+4", "reply 5"][len(traj.turns)] if len(traj.turns) < 3 else None


@pytest.fixture
def group(daemons) -> harnessd.GroupResult:
    ds = [daemons.start(max_sessions=2) for _ in range(2)]

    async def go() -> harnessd.GroupResult:
        async with harnessd.Pool([d.url for d in ds]) as pool:
            return await harnessd.rollout_group(pool, None, 4, policy, group_id="conv")

    g = asyncio.run(go())
    assert not g.failed and all(e.export for e in g.episodes)
    return g


def test_samples(group: harnessd.GroupResult) -> None:
    samples = convert.samples_from_group(group)
    assert len(samples) == 4
    for s, ep in zip(samples, group.episodes):
        ch = ep.export["chains"][0]
        assert s.input_ids == ch["input_ids"] and len(s.prompt_ids) == ch["prompt_length"]
        assert len(s.completion_ids) == len(s.loss_mask) == len(s.logprobs)
        # Two sampled spans with the second call's added prompt between.
        kinds = [sp["kind"] for sp in ch["spans"]]
        assert kinds == ["prompt", "completion", "prompt", "completion"]
        gap = ch["spans"][2]
        assert gap["end"] > gap["start"]
        p = ch["prompt_length"]
        assert s.loss_mask[gap["start"] - p: gap["end"] - p] == [0] * (gap["end"] - gap["start"])
        assert sum(s.loss_mask) == sum(sp["end"] - sp["start"] for sp in ch["spans"] if sp["kind"] == "completion")
        assert all(lp == 0.0 for lp, m in zip(s.logprobs, s.loss_mask) if not m)
        assert all(lp < 0 for lp, m in zip(s.logprobs, s.loss_mask) if m)
        assert s.reward == 1.0 and s.calls == [1, 2] and s.turns == [1, 2]
        assert s.group == "conv" and s.index == ep.index
    final = convert.samples_from_group(group, reward="final")
    assert [s.reward for s in final] == [1.0] * 4


def test_skyrl_generator_output(group: harnessd.GroupResult) -> None:
    samples = convert.samples_from_group(group)
    out = convert.to_skyrl(samples)
    # Our TrajectoryID stands in for SkyRL's when skyrl_train is absent:
    # check it against the transcribed dataclass's fields.
    hints = dict(typing.get_type_hints(SkyRLGeneratorOutput))
    hints["trajectory_ids"] = Optional[List[SkyRLTrajectoryID]]
    assert set(out) == set(hints)
    for k, t in hints.items():
        conforms(out[k], t, f"GeneratorOutput.{k}")
    n = len(samples)
    for k in ("prompt_token_ids", "response_ids", "rewards", "loss_masks", "stop_reasons", "rollout_logprobs", "trajectory_ids"):
        assert len(out[k]) == n, k
    for i, s in enumerate(samples):
        assert out["prompt_token_ids"][i] + out["response_ids"][i] == s.input_ids
        assert len(out["loss_masks"][i]) == len(out["response_ids"][i]) == len(out["rollout_logprobs"][i])
        assert out["trajectory_ids"][i].instance_id == "conv" and out["trajectory_ids"][i].repetition_id == i
        assert out["trajectory_ids"][i].to_string() == f"conv_{i}"
        assert out["stop_reasons"][i] == "stop"
    assert out["rollout_metrics"]["harnessd/episodes"] == 4


def test_verifiers_rollout_output(group: harnessd.GroupResult) -> None:
    for ep in group.episodes:
        out = convert.to_verifiers(ep, example_id=3)
        traj = out.pop("trajectory")
        check_typeddict(out, RolloutOutput, "RolloutOutput")
        conforms(traj, List[TrajectoryStep], "trajectory")
        assert out["example_id"] == 3 and out["reward"] == 1.0 and out["stop_condition"] == "policy_stopped"
        assert out["prompt"] == [{"role": "user", "content": "llm what is 2+3"}]
        assert [m["role"] for m in out["completion"]] == ["assistant", "user", "assistant", "user", "assistant"]
        assert out["completion"][-1] == {"role": "assistant", "content": "5"}
        ch = ep.export["chains"][0]
        assert len(traj) == 2
        for st, sp in zip(traj, [s for s in ch["spans"] if s["kind"] == "completion"]):
            tok = st["tokens"]
            assert tok["prompt_ids"] == ch["input_ids"][: sp["start"]]
            assert tok["completion_ids"] == ch["input_ids"][sp["start"]: sp["end"]]
            assert tok["prompt_mask"] == [0] * len(tok["prompt_ids"])
            assert tok["completion_mask"] == [1] * len(tok["completion_ids"])
            assert tok["completion_logprobs"] == ch["logprobs"][sp["start"]: sp["end"]]
            assert st["extras"]["call_index"] == sp["call_index"]
            # The messages are those the gateway saw for the call.
            assert st["prompt"][-1]["role"] == "user" and st["completion"][0]["role"] == "assistant"
        # The second call's prompt is the first call's prompt + completion
        # + the added user turn.
        assert traj[1]["tokens"]["prompt_ids"][: len(traj[0]["tokens"]["prompt_ids"]) + len(traj[0]["tokens"]["completion_ids"])] == \
            traj[0]["tokens"]["prompt_ids"] + traj[0]["tokens"]["completion_ids"]


def test_trl_rollout_func_output(group: harnessd.GroupResult) -> None:
    samples = convert.samples_from_group(group)
    out = convert.to_trl(samples)
    assert TRL_REQUIRED <= set(out)
    conforms(out["prompt_ids"], List[List[int]], "prompt_ids")
    conforms(out["completion_ids"], List[List[int]], "completion_ids")
    conforms(out["logprobs"], List[List[float]], "logprobs")
    conforms(out["env_mask"], List[List[int]], "env_mask")
    # The extra fields are per-sample lists, as TRL hands them to reward
    # functions.
    for k in set(out) - TRL_REQUIRED - {"env_mask"}:
        assert isinstance(out[k], list) and len(out[k]) == len(samples), k
    for i, s in enumerate(samples):
        assert out["prompt_ids"][i] + out["completion_ids"][i] == s.input_ids
        assert len(out["logprobs"][i]) == len(out["completion_ids"][i]) == len(out["env_mask"][i])
        assert set(out["env_mask"][i]) == {0, 1}
        assert all(lp == 0.0 for lp, m in zip(out["logprobs"][i], out["env_mask"][i]) if m == 0)
    assert convert.trl_reward(prompts=None, completions=None, **{k: v for k, v in out.items() if k not in TRL_REQUIRED}) == [1.0] * 4


def test_export_checks(group: harnessd.GroupResult) -> None:
    ex = group.episodes[0].export
    bad = copy.deepcopy(ex)
    bad["issues"].append({"severity": "fatal", "code": "misaligned", "chain": 1, "message": "x"})
    assert convert.samples_from_export(bad) == []
    assert len(convert.samples_from_export(bad, drop_fatal=False)) == 1
    short = copy.deepcopy(ex)
    short["chains"][0]["loss_mask"].pop()
    with pytest.raises(ValueError, match="differ in length"):
        convert.samples_from_export(short)
    nolp = copy.deepcopy(ex)
    p = nolp["chains"][0]["prompt_length"]
    nolp["chains"][0]["logprobs"][p] = None
    with pytest.raises(ValueError, match="no logprob"):
        convert.samples_from_export(nolp)
    with pytest.raises(ValueError, match="format"):
        convert.samples_from_export({"format": "other"})
    assert convert.samples_from_export(ex, reward=0.25)[0].reward == 0.25


def test_the_checker_refuses_what_does_not_conform(group: harnessd.GroupResult) -> None:
    # Positive control: the checks above can fail.
    out = convert.to_skyrl(convert.samples_from_group(group))
    with pytest.raises(AssertionError):
        conforms([[1, "2"]], List[List[int]], "x")
    with pytest.raises(AssertionError):
        conforms([[True]], List[List[int]], "x")
    with pytest.raises(AssertionError):
        conforms({"a": 1}, Optional[List[str]], "x")
    v = convert.to_verifiers(group.episodes[0])
    v.pop("trajectory")
    for mutate in (lambda d: d.pop("reward"), lambda d: d.__setitem__("extra_key", 1), lambda d: d.__setitem__("is_truncated", "no")):
        d = copy.deepcopy(v)
        mutate(d)
        with pytest.raises(AssertionError):
            check_typeddict(d, RolloutOutput, "RolloutOutput")
    with pytest.raises(AssertionError):
        conforms([{"instance_id": "a"}], List[SkyRLTrajectoryID], "x")
    assert out["trajectory_ids"]


def failing_policy(obs: harnessd.Observation, traj: Trajectory) -> str | None:
    """A model call, then episode 1 of the group crashes its harness (exit
    3) while the others answer."""
    if not traj.turns:
        return "llm what is 2+3"
    if len(traj.turns) == 1:
        return "crash 3" if traj.episode_id.endswith("-1") else "reply 5"
    return None


def test_a_failed_episode_is_marked_and_can_be_dropped(daemons) -> None:
    """An episode that ended in a failure (here its harness crashed after a
    model call) became a sample like any other: reward 0.0 (its crash's
    reward is None, no rubric ran), finish_reason "stop", nothing saying it
    failed, so a trainer took a crash of its harness for the policy's low
    score. Its samples carry the failure; failed="drop" leaves them out."""
    d = daemons.start(max_sessions=3)

    async def go() -> harnessd.GroupResult:
        async with harnessd.Pool([d.url]) as pool:
            return await harnessd.rollout_group(pool, None, 3, failing_policy, group_id="fail")

    g = asyncio.run(go())
    assert [e.trajectory.error_type for e in g.episodes] == ["", "harness_crashed", ""]
    kept = convert.samples_from_group(g)
    assert [(s.index, s.error_type, s.failed) for s in kept] == [(0, "", False), (1, "harness_crashed", True), (2, "", False)]
    assert kept[1].completion_ids and kept[1].reward == 0.0  # the control: its tokens are there, as before
    assert convert.to_trl(kept)["error_type"] == ["", "harness_crashed", ""]
    dropped = convert.samples_from_group(g, failed="drop")
    assert [s.index for s in dropped] == [0, 2] and all(s.reward == 1.0 for s in dropped)
    with pytest.raises(ValueError, match="failed is"):
        convert.samples_from_group(g, failed="skip")
