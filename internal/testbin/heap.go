package testbin

import "runtime"

// LiveHeap is the test process's live heap (HeapAlloc) after a
// collection: what a memory bound's test compares before and after.
func LiveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// HeapInUse is the test process's heap spans in use (HeapInuse) after a
// collection: what a bound of buffers held by many connections is
// compared by.
func HeapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
