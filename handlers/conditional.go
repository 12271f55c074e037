package handlers

// Conditional requests (RFC 9110 §13): If-None-Match and If-Modified-Since
// turn a read into a 304 from L1/Redis, If-Match and If-Unmodified-Since
// turn a write into a precondition on the version it was based on (lost
// updates), and a read of a version that is gone into a 412.

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/stampede-guard/api/repo"
)

// notModified evaluates If-None-Match, or If-Modified-Since when there is
// no If-None-Match (RFC 9110 §13.2.2), against the current representation
// of a product updated at updated, at now.
func notModified(r *http.Request, etag string, updated, now time.Time) bool {
	// Read by map index: the keys are canonical already, and Get would
	// check that again on every product read.
	if inm := r.Header["If-None-Match"]; len(inm) > 0 {
		return linesName(inm, etag, weak) // If-None-Match compares weakly
	}
	v := first(r.Header["If-Modified-Since"])
	if v == "" || !dateValidates(updated, now) {
		return false // the common case: a failed parse allocates its error
	}
	ims, err := http.ParseTime(v)
	if err != nil {
		return false
	}
	return !updated.Truncate(time.Second).After(ims)
}

// dateSettled is how long after the end of its second an update time
// becomes a validator. An HTTP date has whole seconds and updated_at has
// microseconds: a Last-Modified given out during the second of an update
// would name a second in which the product may change again, and a client
// revalidating with it would be told 304 for the newer version (RFC 9110
// §8.8.2.2: a date is a strong validator only once a second has passed).
// One more second covers the skew between PostgreSQL's clock, which sets
// updated_at, and this host's.
const dateSettled = time.Second

// dateValidates reports whether a product updated at updated may be
// judged by an HTTP date at now: its second, plus dateSettled, is over.
// Until then no Last-Modified is given out (the ETag, exact, still is),
// If-Modified-Since gets the whole answer and If-Unmodified-Since fails.
func dateValidates(updated, now time.Time) bool {
	return !updated.IsZero() && !now.Before(updated.Truncate(time.Second).Add(time.Second+dateSettled))
}

// readPreconditionFailed evaluates a read's If-Match, or
// If-Unmodified-Since when there is no If-Match (RFC 9110 §13.2.2 steps 1
// and 2): a GET that asks for a version the product no longer has gets
// 412, not the other version. False when neither header is sent.
func readPreconditionFailed(r *http.Request, etag string, updated, now time.Time) bool {
	if im := r.Header["If-Match"]; len(im) > 0 {
		return !linesName(im, etag, strong)
	}
	return !unmodifiedSince(r, updated, now)
}

// unmodifiedSince evaluates If-Unmodified-Since: true when the header is
// absent or not a date (RFC 9110 §13.1.4: then ignored), or when the
// product has not changed after it; false too while its update time is not
// yet a validator (dateValidates), since the second it names may hold a
// later change.
func unmodifiedSince(r *http.Request, updated, now time.Time) bool {
	v := first(r.Header["If-Unmodified-Since"])
	if v == "" {
		return true
	}
	ius, err := http.ParseTime(v)
	if err != nil {
		return true
	}
	return dateValidates(updated, now) && !updated.Truncate(time.Second).After(ius)
}

// first is a header's first value, as Header.Get returns it.
func first(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

// ifMatch returns the precondition of a write from its If-Match header:
// the product's current ETag is in the list, or the list holds "*" (any
// current version). The comparison is strong: a weak tag (W/"...") never
// matches, as RFC 9110 §13.1.1 requires. nil when the header is absent (an
// unconditional write).
func ifMatch(r *http.Request) (func(current repo.Product) bool, error) {
	tags, err := tagList(r, "If-Match")
	if tags == nil {
		return nil, err
	}
	return func(current repo.Product) bool {
		_, etag := productJSON(current)
		return names(tags, etag, strong)
	}, nil
}

// tagList reads a write's conditional header as one list of entity tags
// over all its lines (RFC 9110 §5.3): nil when the header is absent, and a
// 400 when it holds no tag.
func tagList(r *http.Request, name string) ([]string, error) {
	v := r.Header.Values(name)
	if len(v) == 0 {
		return nil, nil
	}
	tags := splitETags(strings.Join(v, ","))
	if len(tags) == 0 {
		return nil, badRequest(name + ` must be "*" or a list of ETags`)
	}
	return tags, nil
}

// ifNoneMatch returns the precondition of a write from its If-None-Match
// header (RFC 9110 §13.1.2): none of the listed ETags is the product's
// current one, compared weakly, and "*" matches any current version, so
// a PUT with "If-None-Match: *" never overwrites. nil when the header is
// absent.
func ifNoneMatch(r *http.Request) (func(current repo.Product) bool, error) {
	tags, err := tagList(r, "If-None-Match")
	if tags == nil {
		return nil, err
	}
	return func(current repo.Product) bool {
		_, etag := productJSON(current)
		return !names(tags, etag, weak)
	}, nil
}

// writePreconditions is a write's If-Match (or, without it,
// If-Unmodified-Since) and If-None-Match together (both must hold); nil
// when none of them is sent.
func writePreconditions(r *http.Request) (func(current repo.Product) bool, error) {
	match, err := ifMatch(r)
	if err != nil {
		return nil, err
	}
	if match == nil && first(r.Header["If-Unmodified-Since"]) != "" {
		match = func(current repo.Product) bool { return unmodifiedSince(r, current.UpdatedAt, time.Now()) }
	}
	noneMatch, err := ifNoneMatch(r)
	switch {
	case err != nil:
		return nil, err
	case noneMatch == nil:
		return match, nil
	case match == nil:
		return noneMatch, nil
	}
	return func(current repo.Product) bool { return match(current) && noneMatch(current) }, nil
}

// preconditionError names what a failed write precondition was about when
// If-None-Match or If-Unmodified-Since took part: the repository only
// knows that the product did not meet the request's test, and says so in
// If-Match's words. Other errors pass through.
func preconditionError(r *http.Request, err error) error {
	if !errors.Is(err, repo.ErrPreconditionFailed) {
		return err
	}
	byMatch := len(r.Header.Values("If-Match")) > 0
	if errors.Is(err, repo.ErrPreconditionAbsent) {
		if !byMatch {
			// If-None-Match holds for a product that does not exist, and a
			// date has nothing to compare with; PUT does not create one:
			// the plain 404.
			return repo.ErrNotFound
		}
		return err
	}
	switch {
	case len(r.Header.Values("If-None-Match")) > 0:
		return &requestError{status: http.StatusPreconditionFailed, msg: "a precondition failed: If-None-Match names the product's current ETag (or is *), or If-Match does not; nothing was changed"}
	case !byMatch: // If-Unmodified-Since alone
		return &requestError{status: http.StatusPreconditionFailed, msg: "a precondition failed: the product changed after If-Unmodified-Since " +
			"(or within the last two seconds, which a date cannot tell apart); nothing was changed: GET it again"}
	}
	return err
}

// The two comparisons of entity tags (RFC 9110 §8.8.3.2): If-Match is
// strong (a weak tag never matches), If-None-Match weak (W/ is ignored).
const (
	strong = false
	weak   = true
)

// names reports whether tags hold "*" or name etag, compared strongly or
// weakly (the current ETag is always strong).
func names(tags []string, etag string, weakly bool) bool {
	for _, t := range tags {
		if weakly {
			t = strings.TrimPrefix(t, "W/")
		}
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// linesName is names over a header's lines, which form one list (RFC
// 9110 §5.3).
func linesName(lines []string, etag string, weakly bool) bool {
	for _, line := range lines {
		if names(splitETags(line), etag, weakly) {
			return true
		}
	}
	return false
}

// splitETags splits a comma-separated list of entity tags. A comma can
// appear inside a quoted tag, so it walks the quotes instead of splitting.
func splitETags(s string) []string {
	var tags []string
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return tags
		}
		if s[0] == '*' {
			tags, s = append(tags, "*"), s[1:]
			continue
		}
		start := 0
		if strings.HasPrefix(s, "W/") {
			start = 2
		}
		if len(s) <= start || s[start] != '"' {
			return tags // not an entity tag: ignore the rest
		}
		end := strings.IndexByte(s[start+1:], '"')
		if end < 0 {
			return tags
		}
		end += start + 2
		tags, s = append(tags, s[:end]), s[end:]
	}
}
