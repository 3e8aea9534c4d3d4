package testbin

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// OnThrowawayThread runs fn on a thread of its own, locked to it, and
// throws the thread away after fn returns, with whatever fn changed of it
// (namespaces unshared, credentials): a test's way to work in namespaces
// of its own without the rest of the process following.
//
// The thread is never the process's main thread. Go ends a thread whose
// goroutine exits locked, but wedges the main thread instead, and the main
// thread is the one /proc/self and the mount table follow: a test that
// unshared its mount namespace there changed what every later test of the
// binary read (the SIGKILL tests' unmounting failed with "device or
// resource busy"). When fn's goroutine lands on the main thread it keeps
// that thread, locked, while another goroutine runs fn, so fn cannot land
// there too.
func OnThrowawayThread(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			OnThrowawayThread(fn)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		defer close(done)
		fn()
		// Returns locked: the runtime ends the thread.
	}()
	<-done
}
