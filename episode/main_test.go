package episode

import (
	"os"
	"testing"

	"github.com/harnessd/harnessd/process/sandbox"
)

// TestMain lets this test binary be the init of the sandboxes its tests
// start (it lies where go test builds it, which every sandbox's uid can
// reach; a checkout's bin/ may not be).
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
