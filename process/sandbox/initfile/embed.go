//go:build harnessd_embedinit

package initfile

import _ "embed"

// embeddedInitBinary is cmd/harnessd-sandbox-init, built by the Makefile
// into this directory just before the daemon (same source, same build).
//
//go:embed harnessd-sandbox-init
var embeddedInitBinary []byte

func init() { embeddedInit = embeddedInitBinary }
