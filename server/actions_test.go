package server_test

import (
	"testing"
)

// Each action answers on its own path alone: a verb its segment does not
// take, a missing verb, or a verb on a route that takes none is no route,
// and an id never carries a verb into another route.
func TestActionsAnswerOnlyOnTheirOwnPaths(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	fin, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	expect(t, fin, 200, "")
	asset := ups[0].AssetID

	for _, path := range []string{
		"/v1/assets/" + asset + ":explode",
		"/v1/assets/" + asset + ":",
		"/v1/assets/" + asset,
		"/v1/projects/" + project + "/assets:explode",
		"/v1/projects/" + project + "/assets:applyAction", // cull's verb
		"/v1/projects/" + project + "/cull:import",        // assets' verb
		"/v1/projects/" + project + "/archive:reprocess",
	} {
		expect(t, a.do("POST", path, key, map[string]any{}), 404, "route_not_found")
	}
	for _, path := range []string{
		"/v1/assets/" + asset + ":reprocess",
		"/v1/assets/" + asset + ":reprocess/files",
		"/v1/assets/" + asset + ":reprocess/jobs",
	} {
		expect(t, a.do("GET", path, key, nil), 404, "route_not_found")
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets", key, map[string]any{}), 405, "method_not_allowed")

	r := a.do("POST", "/v1/assets/"+asset+":reprocess", key, nil)
	expect(t, r, 202, "")
	if jobs := decode[queued](t, r).QueuedJobs; len(jobs) != 1 {
		t.Fatalf("reprocess: %s", r.body)
	}
}
