package server

import "runtime/debug"

// releaseFloodMemory returns the memory of a turn that hit its bounds (a
// flood: tens of MiB of events, their encoding and the frame, all garbage
// once the frame is written) to the OS at once, rather than leaving the
// daemon's footprint raised until the runtime's scavenger gets to it. It
// costs a full collection, paid only after such turns. Callers must no
// longer hold the observation.
func releaseFloodMemory() { debug.FreeOSMemory() }
