package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The catalogue of error codes, the code that answers them and
// openapi.yaml's list agree: every code answered here (and by jsonbody)
// is catalogued with the status it comes with, every catalogued code is
// answered somewhere, and the document lists exactly the catalogue's.
func TestErrorCodesAreCatalogued(t *testing.T) {
	t.Parallel()
	type pair struct {
		code   string
		status int
	}
	catalogued := map[pair]bool{}
	var codes []string
	for _, e := range errorCodes {
		if catalogued[pair{e.Code, e.Status}] {
			t.Errorf("%s with %d is catalogued twice", e.Code, e.Status)
		}
		catalogued[pair{e.Code, e.Status}] = true
		if e.Meaning == "" || e.Status < 400 {
			t.Errorf("%s: status %d, meaning %q", e.Code, e.Status, e.Meaning)
		}
		if !slices.Contains(codes, e.Code) {
			codes = append(codes, e.Code)
		}
	}

	statuses := httpStatuses(t)
	answered := map[pair]bool{}
	files, _ := filepath.Glob("*.go")
	more, _ := filepath.Glob("jsonbody/*.go")
	for _, name := range append(files, more...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, _ := call.Fun.(*ast.Ident)
			if fn == nil {
				return true
			}
			status := func(i int) int { return statuses[selectorName(call.Args[i])] }
			var p pair
			switch {
			case (fn.Name == "apiError" || fn.Name == "problem") && len(call.Args) >= 2:
				p = pair{stringLit(call.Args[1]), status(0)}
			case fn.Name == "errQuota" && len(call.Args) >= 1:
				p = pair{"quota_exceeded", status(0)}
			case fn.Name == "retryLater" && len(call.Args) >= 3:
				p = pair{stringLit(call.Args[2]), http.StatusTooManyRequests}
			default:
				return true
			}
			if p.code == "" || p.status == 0 {
				return true // a wrapper passing its own arguments on
			}
			answered[p] = true
			if !catalogued[p] {
				t.Errorf("%s answers %s with %d, which errorCodes does not list", name, p.code, p.status)
			}
			return true
		})
	}
	for p := range catalogued {
		if !answered[p] {
			t.Errorf("errorCodes lists %s with %d, which nothing answers", p.code, p.status)
		}
	}

	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, v := range doc.Components.Schemas["Error"].Value.Properties["code"].Value.Enum {
		s, _ := v.(string)
		listed = append(listed, s)
	}
	slices.Sort(listed)
	slices.Sort(codes)
	if !slices.Equal(listed, codes) {
		t.Errorf("openapi.yaml's Error.code lists\n%v\nerrorCodes has\n%v", listed, codes)
	}
}

// httpStatuses reads net/http's Status constants by name.
func httpStatuses(t *testing.T) map[string]int {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(runtime.GOROOT(), "src/net/http/status.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok && len(v.Values) == 1 {
			if lit, ok := v.Values[0].(*ast.BasicLit); ok {
				n, _ := strconv.Atoi(lit.Value)
				out["http."+v.Names[0].Name] = n
			}
		}
		return true
	})
	if out["http.StatusTeapot"] != 418 {
		t.Fatalf("net/http's status.go reads as %d constants, without StatusTeapot", len(out))
	}
	return out
}

func selectorName(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := s.X.(*ast.Ident); ok {
			return x.Name + "." + s.Sel.Name
		}
	}
	return ""
}

func stringLit(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		s, _ := strconv.Unquote(lit.Value)
		return s
	}
	return ""
}
