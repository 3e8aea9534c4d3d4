package agent

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// attackEgressFlood: "egress-flood N [HOSTLEN]" — N CONNECT requests, one
// connection each, to the egress proxy of HTTPS_PROXY for a host of
// HOSTLEN letters (default 20) that no policy allows; past 63 letters the
// host is not even a valid name. Each is refused and, on the daemon's
// side, becomes one egress event of the turn. Count is how many were
// answered; OK when all were.
func attackEgressFlood(ctx context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "egress-flood N [HOSTLEN]"); r != nil {
		return *r
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n <= 0 {
		return AttackResult{Errno: "EINVAL", Detail: "egress-flood: N must be a positive count"}
	}
	hostLen := 20
	if len(args) > 1 {
		if hostLen, err = strconv.Atoi(args[1]); err != nil || hostLen <= 0 {
			return AttackResult{Errno: "EINVAL", Detail: "egress-flood: HOSTLEN must be a positive count"}
		}
	}
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return AttackResult{Errno: "EINVAL", Detail: "egress-flood: no HTTPS_PROXY"}
	}
	target := strings.Repeat("d", hostLen) + ".example:443"
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"
	var r AttackResult
	statuses := map[int]int{}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		c, err := net.DialTimeout("tcp", u.Host, attackTimeout)
		if err != nil {
			r.Errno, r.Detail = errnoOf(err), err.Error()
			break
		}
		c.SetDeadline(time.Now().Add(attackTimeout))
		_, err = c.Write([]byte(req))
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		}
		c.Close()
		if err != nil {
			r.Errno, r.Detail = errnoOf(err), err.Error()
			break
		}
		resp.Body.Close()
		statuses[resp.StatusCode]++
		r.Count++
	}
	r.OK = r.Count == n
	r.Detail = fmt.Sprintf("%d of %d CONNECTs answered, statuses %v; %s", r.Count, n, statuses, r.Detail)
	return r
}
