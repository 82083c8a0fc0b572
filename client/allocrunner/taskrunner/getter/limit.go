package getter

import (
	"fmt"
	"io"
	"net/http"
)

// limitTransport fails an http(s) response larger than max bytes (0: no
// limit), so that a download over http_max_size is an error naming the
// limit rather than a file cut short.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

// TooLargeError is the error of a response over http_max_size.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("artifact exceeds the client's http_max_size of %d bytes", e.Max)
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || t.max <= 0 {
		return resp, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, &TooLargeError{Max: t.max}
	}
	resp.Body = &limitBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	return resp, nil
}

// limitBody reads at most max bytes and fails on the first byte past it.
type limitBody struct {
	io.ReadCloser
	left, max int64
}

func (b *limitBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		return int(b.left), &TooLargeError{Max: b.max}
	}
	b.left -= int64(n)
	return n, err
}
