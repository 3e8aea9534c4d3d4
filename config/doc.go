// Package config owns an environment's configuration: the YAML a user
// writes (harness, tools, model, sandbox, limits, episode, rewards, tasks,
// events, the simulated user), decoded strictly (an unknown key is an
// error naming its line), its relative paths resolved against the file's
// directory, defaults applied in one place (the Default constants) and
// every problem reported at once by ParseConfig and LoadConfig. A Config
// is data: serve, validate, run and eval read it.
//
// It reads the configuration and the files it names (a prompt file), and
// checks that named paths and programs exist; it must not start a process,
// open a socket, create a file or directory, or hold state between loads.
// Making the configured things (sandboxes, gateways, tool servers) belongs
// to the packages that run episodes.
package config
