// Package agents holds the real-agent integration tests: every agent that
// package.json in this directory pins from the npm registry (installed by
// `make agents` into node_modules) is driven through the real harnessd
// binary, as a user would run it (`harnessd serve --agent NAME
// --agents-dir node_modules/.bin --model-url URL --tool stdio:...`),
// against the fake LLM of testharness/fakellm and the MCP tools of
// `testharness tools`, over real sockets with the client package.
//
// The package has no code of its own: it owns the test suite, package.json,
// package-lock.json (completed by complete-lock.mjs) and nothing else. It
// must not touch the agents' installation beyond reading it, nor anything
// outside the temporary directories of its tests.
//
// An agent that is not installed makes its test skip, with a message saying
// how to install it, unless CI=true: there a missing prerequisite fails.
package agents
