package server

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// An action is a custom method: a POST whose path's last segment ends in
// ":verb", after a name (/v1/projects/{id}/assets:import) or an id
// (/v1/assets/{id}:reprocess). Gin splits a path only at "/", and a
// parameter takes the rest of its segment, so it cannot hold /assets/:id
// beside /assets/:id:reprocess. Every action is therefore declared with its
// whole path through actions.POST, and each segment that takes actions
// gets one Gin route whose handler picks the action by its verb.
type actions struct {
	group      *gin.RouterGroup
	middleware []gin.HandlerFunc
	verbs      map[string]map[string]action // Gin route → verb → action
	table      *actionTable
}

type action struct {
	path    string // as declared, under the group's base path
	handler gin.HandlerFunc
}

// actionTable is what Server.Routes needs to list actions one by one.
type actionTable struct {
	declared    gin.RoutesInfo
	dispatchers map[string]bool // the Gin routes that dispatch, unescaped
}

// actions declares actions on g, each run after middleware.
func (s *Server) actions(g *gin.RouterGroup, middleware ...gin.HandlerFunc) *actions {
	if s.actionTable.dispatchers == nil {
		s.actionTable.dispatchers = map[string]bool{}
	}
	return &actions{group: g, middleware: middleware, verbs: map[string]map[string]action{}, table: &s.actionTable}
}

// POST declares the action at path, which ends in ":verb".
func (a *actions) POST(path string, handler gin.HandlerFunc) {
	slash, colon := strings.LastIndexByte(path, '/'), strings.LastIndexByte(path, ':')
	if colon <= slash+1 {
		panic("action path without a verb: " + path)
	}
	route, verb := path[:colon], path[colon+1:]
	if path[slash+1] != ':' {
		// After a name the verb is a parameter of its own; after an id,
		// the id's parameter holds it and dispatch cuts it off.
		route += `\::verb`
	}
	verbs, ok := a.verbs[route]
	if !ok {
		verbs = map[string]action{}
		a.verbs[route] = verbs
		a.group.POST(route, append(a.middleware, dispatch(verbs))...)
		a.table.dispatchers[unescaped(a.group.BasePath()+route)] = true
	}
	full := a.group.BasePath() + path
	verbs[verb] = action{path: full, handler: handler}
	a.table.declared = append(a.table.declared, gin.RouteInfo{Method: http.MethodPost, Path: full})
}

// dispatch runs the action the request's verb names, with the verb cut
// off the last path parameter, so that an id is only the id.
func dispatch(verbs map[string]action) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := c.Request.URL.Path
		segment := p[strings.LastIndexByte(p, '/')+1:]
		colon := strings.LastIndexByte(segment, ':')
		act, ok := verbs[segment[colon+1:]]
		if colon < 0 || !ok {
			fail(c, errNoRoute())
			return
		}
		if last := len(c.Params) - 1; last >= 0 {
			c.Params[last].Value = strings.TrimSuffix(c.Params[last].Value, segment[colon:])
		}
		c.Set(ctxRoute, act.path)
		act.handler(c)
	}
}

// route is the template the request matched, each action its own.
func route(c *gin.Context) string {
	if r := c.GetString(ctxRoute); r != "" {
		return r
	}
	return c.FullPath()
}

// Routes lists every route with its path as declared, each action on its
// own rather than the Gin route that dispatches it: what openapi.yaml
// describes.
func (s *Server) Routes() gin.RoutesInfo {
	var out gin.RoutesInfo
	for _, r := range s.router.Routes() {
		if r.Method != http.MethodPost || !s.actionTable.dispatchers[unescaped(r.Path)] {
			out = append(out, r)
		}
	}
	return append(out, s.actionTable.declared...)
}

// unescaped is a Gin route's path as Gin lists it once it has served: Gin
// drops the backslash of an escaped ":" then, not before.
func unescaped(ginPath string) string { return strings.ReplaceAll(ginPath, `\:`, ":") }
