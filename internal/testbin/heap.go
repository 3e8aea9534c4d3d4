package testbin

import (
	"runtime"
	"strings"
)

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

// Allocated is the bytes the test process allocates on the heap while f
// runs (TotalAlloc, after a collection): what a parse or a request costs,
// freed or not, compared with its input's size by the bounds' tests.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// HeapAlloc is the bytes of live heap objects after a garbage collection.
func HeapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// JSONZeros is a JSON array of n/2 zeros, n bytes: the input of the worst
// shape for a decoder into Go values (a value per two bytes).
func JSONZeros(n int) string {
	return "[" + strings.Repeat("0,", n/2-1) + "0]"
}
