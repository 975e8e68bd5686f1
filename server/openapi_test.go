package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
)

// leftOut are the route prefixes openapi.yaml does not describe: Asynqmon,
// a dashboard with its own API.
var leftOut = []string{"/admin/queues/"}

// apiSpec is openapi.yaml, loaded once for every test of the package.
type apiSpec struct {
	doc *openapi3.T
}

var loadSpec = sync.OnceValues(func() (*apiSpec, error) {
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid document: %w", err)
	}
	return &apiSpec{doc: doc}, nil
})

// openAPIPath writes a Gin route path as the document does.
func openAPIPath(ginPath string) string {
	parts := strings.Split(strings.ReplaceAll(ginPath, `\:`, "\x00"), "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return strings.ReplaceAll(strings.Join(parts, "/"), "\x00", ":")
}

// actionRoutes are Gin routes whose id carries an action: the document
// names each action's path.
var actionRoutes = map[string]string{"POST /v1/assets/{id}": "POST /v1/assets/{id}:reprocess"}

func TestOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
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
	for _, rt := range a.handler.(*gin.Engine).Routes() {
		if slices.ContainsFunc(leftOut, func(p string) bool { return strings.HasPrefix(rt.Path, p) }) {
			continue
		}
		op := rt.Method + " " + openAPIPath(rt.Path)
		if named, ok := actionRoutes[op]; ok {
			op = named
		}
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
