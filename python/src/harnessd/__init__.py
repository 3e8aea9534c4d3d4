"""harnessd's Python client.

- :class:`Env` / :class:`AsyncEnv`: one environment session over ``/ws``
  (reset, step, state, export, close);
- :class:`Pool`: sessions over many daemons, by free capacity, health-aware,
  with retries of infrastructure failures and bounded concurrency;
- :func:`rollout_group`: G episodes of one task, with trajectories, rewards
  and training exports — G resets (:class:`ResetGroup`) or one episode
  forked G ways after a prefix (:class:`ForkGroup`);
- :meth:`AsyncEnv.fork`, :meth:`AsyncEnv.attach`: a live episode forked
  into siblings (:class:`Sibling`), each a session to attach to
  (docs/fork.md);
- :class:`CallIDs`, :func:`full_calls`: the gateway's model calls rebuilt
  whole from the deltas its events carry;
- :mod:`harnessd.convert`: the export as token-level samples, SkyRL's
  ``GeneratorOutput``, verifiers' and TRL's rollout shapes;
- :func:`filter_stale` (:mod:`harnessd.policy`): samples too far behind the
  trainer's policy version, or straddling a version change, left out.

See docs/training.md for a worked example.
"""

from .calls import CallIDs, MissingBase, full_calls
from .env import AsyncEnv, Env
from .errors import (
    AuthenticationError,
    BusyError,
    CapacityError,
    ExecutionError,
    ExportUnavailable,
    FactoryError,
    HarnessdError,
    InfrastructureError,
    InvalidJSONError,
    ProtocolError,
    ServerError,
    SessionError,
    SiblingFailed,
    TransportError,
    UnknownTypeError,
    ValidationError,
)
from .http import DaemonHTTP, Health
from .policy import Dropped, StalenessResult, filter_stale
from .pool import NoDaemonAvailable, PolicyVersionNotSet, Pool, Provider, RetryPolicy, StaticProvider
from .rollout import (
    EpisodeResult,
    ForkGroup,
    GroupResult,
    GroupSpec,
    GroupStrategy,
    PrefixEnded,
    ResetGroup,
    Trajectory,
    Turn,
    rollout_group,
    rollout_group_sync,
    run_episode,
)
from .types import Event, Observation, PolicyVersion, Sibling, State

__version__ = "0.1.0"

__all__ = [
    "AsyncEnv", "Env", "Pool", "Provider", "StaticProvider", "RetryPolicy", "NoDaemonAvailable",
    "DaemonHTTP", "Health", "Event", "Observation", "State", "PolicyVersion", "PolicyVersionNotSet",
    "filter_stale", "StalenessResult", "Dropped",
    "Trajectory", "Turn", "EpisodeResult", "GroupResult", "rollout_group", "rollout_group_sync", "run_episode",
    "GroupSpec", "GroupStrategy", "ResetGroup", "ForkGroup", "PrefixEnded", "Sibling", "BusyError", "SiblingFailed",
    "HarnessdError", "InfrastructureError", "TransportError", "AuthenticationError", "ProtocolError", "ServerError", "InvalidJSONError",
    "UnknownTypeError", "ValidationError", "ExecutionError", "ExportUnavailable", "CapacityError", "FactoryError",
    "SessionError", "CallIDs", "MissingBase", "full_calls",
]
