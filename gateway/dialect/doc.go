// Package dialect translates the model APIs CLI agents speak to the
// gateway's middle format and back: OpenAI Chat Completions (Chat), OpenAI
// Responses (Responses), Anthropic Messages (Anthropic) and Gemini
// generateContent (Gemini).
//
// It owns:
//
//   - the middle format: ChatRequest (OpenAI Chat Completions as a
//     token-returning engine takes it, typed: Message, Part, ToolCall, Tool,
//     the remaining fields kept as given) and Completion (the engine's
//     answer, typed, with its wire.TokenUsage);
//   - one Translator type per dialect, made fresh for each request by New:
//     it decodes the agent's request to the middle (Decode), keeps what only
//     its dialect needs to answer (a Chat stream's usage chunk, Gemini's
//     alt=sse, the namespaces of Responses tools), writes the answer in the
//     dialect, streamed or not (Encode), and its errors (WriteError);
//   - the routes each dialect defines (Match): the only paths and query
//     parameters the gateway serves or forwards.
//
// It knows nothing of upstreams, keys, budgets, capture or sessions: the
// gateway package calls it and does all of those. It must not make network
// calls, read files or the environment, or log.
package dialect
