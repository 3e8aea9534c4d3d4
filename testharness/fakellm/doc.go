// Package fakellm is harnessd's scriptable fake LLM server. Real CLI agents
// (Claude Code, Codex, Gemini CLI, OpenCode, Qwen Code, Copilot CLI, pi,
// Goose) point their model base URL at it in integration tests, so that an
// agent deterministically goes through "model asks for an environment tool ->
// agent calls the tool -> tool result -> model answers with text".
//
// The package owns four wire dialects, each with and without streaming:
// Anthropic Messages (/v1/messages, count_tokens), OpenAI Chat Completions
// (/v1/chat/completions), OpenAI Responses (/v1/responses, including
// namespace tools) and Gemini generateContent / streamGenerateContent /
// countTokens. Every dialect's request is reduced to one conversation shape
// that a Script of rules matches on; the chosen answer (text, a tool call
// resolved against the tool names the request actually offers, an HTTP error
// or a delay) is encoded back in the caller's dialect and framing.
//
// Engine mode (Options.Engine) makes Chat Completions answer like a vLLM
// engine with --return-tokens-as-token-ids: prompt_token_ids, per choice
// token_ids and logprobs.content[] with "token_id:N" tokens, derived
// deterministically from a public template and tokenizer (EngineRenderPrompt,
// EngineTokenize, EngineLogprob) so tests recompute what the engine produced.
//
// It also owns the request log (Server.Requests, GET /_fakellm/requests) and
// runtime control (POST /_fakellm/reset, PUT /_fakellm/script). The script
// format and the default behaviour are documented on Script and in
// testharness/README.md.
//
// The package must not import harnessd's own packages: it plays the part of
// a foreign program.
package fakellm
