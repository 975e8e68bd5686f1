package server_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// leftOut are the route prefixes openapi.yaml does not describe: Asynqmon,
// a dashboard with its own API. Answers under them are not checked.
var leftOut = []string{"/admin/queues/"}

// apiSpec is openapi.yaml, loaded once for every test of the package.
type apiSpec struct {
	doc    *openapi3.T
	router routers.Router
}

var loadSpec = sync.OnceValues(func() (*apiSpec, error) {
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &apiSpec{doc: doc, router: router}, nil
})

// conforming checks every answer h gives against openapi.yaml: an answer
// of a route the document does not have, with a status the operation does
// not list, or whose body does not match its schema fails t. Benchmarks
// time the server alone.
func conforming(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	if _, bench := t.(*testing.B); bench {
		return h
	}
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &answer{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		rec.status = cmp.Or(rec.status, http.StatusOK) // nothing written is net/http's 200
		if err := spec.check(r, rec.status, rec.Header(), rec.body.Bytes()); err != nil {
			body := rec.body.String()
			if len(body) > 2000 {
				body = body[:2000] + "…"
			}
			t.Errorf("%s %s answered %d against openapi.yaml: %v\nbody: %s", r.Method, r.URL.Path, rec.status, err, body)
		}
	})
}

func (s *apiSpec) check(r *http.Request, status int, header http.Header, body []byte) error {
	if slices.ContainsFunc(leftOut, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) }) {
		return nil
	}
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" && status == http.StatusNoContent {
		return nil // a CORS preflight, answered before routing for every route
	}
	route, params, err := s.router.FindRoute(routable(r))
	if err != nil {
		// No such operation: only the router's own refusal may answer.
		var e struct{ Code string }
		json.Unmarshal(body, &e)
		if (status == http.StatusNotFound && e.Code == "route_not_found") || (status == http.StatusMethodNotAllowed && e.Code == "method_not_allowed") {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				return err
			}
			return s.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
		}
		return fmt.Errorf("the document has no operation %s %s (%v)", r.Method, r.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// routable is r as the document's router can match it: a blob key spans
// path segments, which an OpenAPI path parameter cannot, so it is looked
// up as one escaped segment.
func routable(r *http.Request) *http.Request {
	key, ok := strings.CutPrefix(r.URL.Path, "/blobs/")
	if !ok {
		return r
	}
	r = r.Clone(r.Context())
	r.URL.Path = "/blobs/" + key
	r.URL.RawPath = "/blobs/" + url.PathEscape(key)
	return r
}

// answer keeps a copy of what a handler writes, passing it on as it comes
// (event streams need their flushes).
type answer struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (a *answer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answer) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	a.body.Write(b)
	return a.ResponseWriter.Write(b)
}

func (a *answer) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (a *answer) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func TestOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.do("GET", "/v1/openapi.json", "", nil)
	expect(t, r, 200, "")
	if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "public") || r.header.Get("ETag") == "" {
		t.Fatalf("not cacheable: Cache-Control %q, ETag %q", cc, r.header.Get("ETag"))
	}
	expect(t, a.do("GET", "/v1/openapi.json", "", nil, "If-None-Match", r.header.Get("ETag")), 304, "")

	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the served document does not validate: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %s, want 3.1", doc.OpenAPI)
	}
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(spec.doc); !bytes.Equal(r.body, want) {
		t.Fatal("the served document is not openapi.yaml")
	}

	routes := map[string]bool{}
	for _, rt := range a.srv.Routes() {
		if slices.ContainsFunc(leftOut, func(p string) bool { return strings.HasPrefix(rt.Path, p) }) {
			continue
		}
		op := rt.Method + " " + openAPIPath(rt.Path)
		routes[op] = true
		method, path, _ := strings.Cut(op, " ")
		if item := doc.Paths.Find(path); item == nil || item.GetOperation(method) == nil {
			t.Errorf("route %s %s is not in the document as %s", rt.Method, rt.Path, op)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !routes[method+" "+path] {
				t.Errorf("the document describes %s %s, which is no route", method, path)
			}
		}
	}
}

// failures stands in for a test's t to see what the check reports.
type failures struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func TestConformanceCheckFailsOnDrift(t *testing.T) {
	t.Parallel()
	answers := map[string]struct {
		status int
		body   string
		drift  bool
	}{
		"/readyz":             {200, `{"status":"ok","checks":{"redis":"ok"},"limiterErrors":0}`, false},
		"/nowhere":            {404, `{"code":"route_not_found","message":"No such route.","requestId":"r1"}`, false},
		"/v1/projects":        {200, `{"items":[],"pageInfo":{"nextCursor":null},"total":0}`, true}, // a field the document lacks
		"/v1/chain/publicKey": {200, `{"algorithm":"Ed25519","hex":"xyz","pem":""}`, true},          // a value its schema refuses
		"/healthz":            {418, `{"code":"teapot","message":"No.","requestId":"r2"}`, true},    // a status it does not list
		"/v1/undescribed":     {200, `{}`, true},                                                    // a route it does not have
		"/v1/session":         {401, `{"code":"unauthenticated","message":"Sign in."}`, true},       // an error without requestId
	}
	f := &failures{TB: t}
	ts := httptest.NewServer(conforming(f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	})))
	defer ts.Close()

	for path, a := range answers {
		f.mu.Lock()
		f.msgs = nil
		f.mu.Unlock()
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		f.mu.Lock()
		if got := len(f.msgs) > 0; got != a.drift {
			t.Errorf("GET %s answering %d %s: reported %v, want reported %v", path, a.status, a.body, f.msgs, a.drift)
		}
		f.mu.Unlock()
	}
}
