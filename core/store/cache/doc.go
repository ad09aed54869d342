// Package cache keeps the reads on aivis's hot paths (a key with its
// account, an account's budget, the targets of an event) in memory for as
// long as what they read is unchanged, over any storage engine: the
// engine gives a Signal that moves whenever a commit (in this process or
// another: the CLI, another instance) may have changed a topic, and every
// cached read checks it first.
package cache
