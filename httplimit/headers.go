package httplimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxInteger is the largest Integer a structured field carries (RFC 9651,
// 15 digits): quotas, remaining quotas and seconds are capped at it.
const maxInteger = 999_999_999_999_999

// validToken reports whether s is an sf-token: a letter or "*", then
// tchars, ":" and "/" (RFC 9651, section 3.3.4).
func validToken(s string) bool {
	if s == "" || !(isAlpha(s[0]) || s[0] == '*') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isTchar(c) && c != ':' && c != '/' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isTchar reports whether c is a tchar (RFC 9110, section 5.6.2).
func isTchar(c byte) bool {
	return isAlpha(c) || '0' <= c && c <= '9' || c < 0x80 && strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkPolicy says what is wrong with p for the header fields, or nil.
func checkPolicy(p Policy) error {
	switch {
	case !validToken(p.Name):
		return fmt.Errorf("httplimit: policy name %q is not an sf-token", p.Name)
	case p.Quota > maxInteger:
		return fmt.Errorf("httplimit: policy %q: quota %d past %d", p.Name, p.Quota, uint64(maxInteger))
	case p.Window < 0:
		return fmt.Errorf("httplimit: policy %q: negative window %v", p.Name, p.Window)
	}
	return nil
}

// seconds is d in whole seconds, rounded up: 0 for d <= 0, at most
// maxInteger.
func seconds(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	s := uint64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return min(s, maxInteger)
}

// retryAfter is the Retry-After value of a refusal: RetryAfter in whole
// seconds, rounded up, at least 1.
func retryAfter(d time.Duration) uint64 { return max(seconds(d), 1) }

// policyField is the RateLimit-Policy value of policies: one item each,
// with its quota and, when it has one, its window in seconds.
func policyField(policies []Policy) string {
	var b strings.Builder
	for i, p := range policies {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q;q=%d", p.Name, p.Quota)
		if w := seconds(p.Window); w > 0 {
			fmt.Fprintf(&b, ";w=%d", w)
		}
	}
	return b.String()
}

// limitField is the RateLimit value of one decision under a policy named
// name with quota quota: the remaining quota (capped at quota) and the
// effective window, t: on a refusal the Retry-After value (no request
// fits before it), otherwise ResetAfter in whole seconds, left out when
// the limiter cannot tell (0).
func limitField(name string, quota uint64, res Result) string {
	r := min(res.Remaining, quota)
	var t uint64
	if !res.Allowed {
		r, t = 0, retryAfter(res.RetryAfter)
	} else {
		t = seconds(res.ResetAfter)
	}
	s := strconv.Quote(name) + ";r=" + strconv.FormatUint(r, 10)
	if t > 0 {
		s += ";t=" + strconv.FormatUint(t, 10)
	}
	return s
}
