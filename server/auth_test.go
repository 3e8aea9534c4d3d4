package server

import (
	"io"
	"net/http"
	"testing"
)

// A token with "/", "@" and ":" in a base URL must be percent-encoded
// (http://harnessd:s3cr3t%2Ft%40k%3Aen@host); OpenEnv's client sends the
// user information as written, so the encoded password is accepted, and
// the raw one still is.
func TestBasicPasswordIsAcceptedPercentEncoded(t *testing.T) {
	ts := start(t, Options{APIToken: "s3cr3t/t@k:en"})
	for _, c := range []struct {
		auth string
		want int
	}{
		{basic("harnessd", "s3cr3t%2Ft%40k%3Aen"), 200},
		{basic("harnessd", "s3cr3t%2ft%40k%3aen"), 200},
		{basic("harnessd", "s3cr3t/t@k:en"), 200},
		{"Bearer s3cr3t/t@k:en", 200},
		{basic("harnessd", "s3cr3t%2Ft%40k"), 401},
		{basic("harnessd", "s3cr3t%2"), 401},
		{"Bearer s3cr3t%2Ft%40k%3Aen", 401}, // a bearer token is not URL text
	} {
		req, _ := http.NewRequest("GET", ts.url+"/metadata", nil)
		req.Header.Set("Authorization", c.auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
}
