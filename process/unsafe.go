package process

import "unsafe"

func unsafePointer(v *int32) unsafe.Pointer { return unsafe.Pointer(v) }
