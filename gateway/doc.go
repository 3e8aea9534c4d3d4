// Package gateway is harnessd's model door: one episode's LLM endpoint,
// between a CLI agent and the model it thinks it is talking to.
//
// It owns:
//
//   - the per-episode key: the agent is given Key (a random sk-harnessd-…
//     string); every request must present it (bearer, x-api-key,
//     x-goog-api-key or ?key=), compared in constant time, or gets 401 in
//     the dialect's error shape. The upstream's real key lives only in
//     Options and is sent only upstream.
//   - the door's bounds on what the agent sends: each request body at most
//     MaxRequestBody (32 MiB, 413), and the bytes of all the bodies in
//     flight together at most the door's body budget (Options.Door.BodyBytes,
//     by default twice MaxRequestBody: 64 MiB; a body without room is
//     refused at once with 503 in the dialect's shape, door_body_budget),
//     each received within 30 s (408); connections are capped by package
//     doorcap.
//   - the agent-side dialects, each streamed or not, on the routes each
//     defines and no others (dialect.Match: exact, normalised paths; only
//     the query parameters the dialect uses go upstream, never the key):
//     OpenAI Chat Completions (SSE re-synthesised with the
//     full chunk lifecycle and [DONE]), OpenAI Responses (response.created …
//     response.completed), Anthropic Messages (message_start …
//     message_stop; count_tokens answered locally, never recorded) and
//     Gemini generateContent / streamGenerateContent (SSE or a JSON array;
//     countTokens likewise). Each is translated to a typed middle format
//     (Chat Completions as the engine takes it) and back by its dialect's
//     translator in package dialect, which keeps the dialect-only state of
//     each request; malformed requests get the dialect's own error shape.
//   - the upstream: a token-returning engine (vLLM or SGLang Chat
//     Completions), always called non-streaming with return_token_ids and
//     logprobs injected, after request hygiene (stream_options dropped,
//     empty tools dropped with tool_choice and parallel_tool_calls,
//     max_tokens capped).
//   - or a passthrough upstream (UpstreamPassthrough): a hosted provider of
//     the agent's own dialect, sent the request at the route's own path,
//     unmodified but for the key swap and the configured model (the
//     provider's own network tools left out unless ProviderNetwork),
//     its answer streamed back as it
//     comes; such calls are recorded as evaluation traffic (no token ids)
//     and have no export.
//   - capture: every call is numbered, stamped with the running turn
//     (SetTurn) and emitted through Options.OnEvent as llm_request and
//     llm_response events of origin gateway, carrying the engine's prompt
//     and completion token ids, logprobs, finish reason, usage and latency,
//     each as a delta from the call before unless SetFullTokenIDs (delta.go);
//     problems with them are graded on ingest (Issue, Severity).
//   - refusals: a request with the key on any other path gets 404 in the
//     dialect's shape, never reaches the upstream, is recorded as an error
//     event (refused_request) and counted (RefusedRequests).
//   - budgets per episode and per turn (Budgets): a call over budget is
//     refused in the dialect's error shape and reported (OnBudget,
//     BudgetExhausted) as a *BudgetError whose FailureType is
//     wire.FailureModelBudget.
//   - the sampling pin (Sampling, SetSampling): the trainer's temperature,
//     top_p, top_k, min_p, seed and max_tokens sent in place of the agent's,
//     and the fields that distort sampling (DistortingFields) stripped unless
//     allowed; what the agent asked, what was sent, stripped, overridden and
//     where it differs from the pin are recorded per call.
//   - policy versions (PolicyVersion, Options.Policy): the version the
//     trainer set, daemon-wide or per session, read when a call goes
//     upstream and when its answer is back; a call in flight across a change
//     straddles the update.
//   - the training export (Export): calls linked into chains by exact token
//     prefix, with input_ids, loss_mask and logprobs per chain and the
//     rewards the caller recorded (SetReward); documented in docs/gateway.md.
//   - history and replay, for forks of an episode (history.go, replay.go):
//     each call keeps its answer as the agent received it (bounded,
//     Options.MaxRecordedAnswerBytes); History copies the calls, a gateway
//     opened with one (Options.History) holds them as its own, inherited,
//     and with Options.Replay answers its next calls from the recorded
//     answers, in order and without the upstream, until they are used up or
//     a request differs from the recorded one (a Divergence).
//
// The package knows nothing of harnesses, processes, sessions or rewards'
// meaning: the daemon creates one Gateway per episode, hands it listeners
// (loopback, or one opened inside a sandbox's network namespace), tells it
// the turn, and collects its events and export. It must not start processes,
// read the daemon's environment or files, or log either key; it never
// tokenises locally and never synthesises rewards.
//
// The package is bigger than 3,000 lines: history and replay work on the
// recorded calls, the prefix index and the dialects' answers, which are
// this package's internals; a package of their own would need them
// exported.
package gateway
