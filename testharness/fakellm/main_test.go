package fakellm_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testbin.Cleanup()
		os.Exit(code)
	}))
}
