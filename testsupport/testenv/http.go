package testenv

import (
	"bytes"
	"net/http"
)

// Put sends body to a signed upload URL with headers, as a browser does,
// and answers the status, or the error of a request the other end cut
// off: refusing a body early, a bucket may close the connection while the
// client is still writing.
func Put(rawURL string, headers map[string]string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPut, rawURL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
