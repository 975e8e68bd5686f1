package server_test

import "testing"

func TestImportQueuesOneDownloadPerURL(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	r := a.do("POST", "/v1/projects/"+project+"/assets:import", key, map[string]any{
		"urls": []string{"https://photos.example.org/a/wood.jpg", "http://photos.example.org/"},
	})
	expect(t, r, 202, "")
	if jobs := decode[queued](t, r).QueuedJobs; len(jobs) != 2 {
		t.Fatalf("import: %s", r.body)
	}
	r = a.do("GET", "/v1/projects/"+project+"/jobs?type=asset:download", key, nil)
	expect(t, r, 200, "")
	if items := decode[pageOf[any]](t, r).Items; len(items) != 2 {
		t.Fatalf("download jobs: %s", r.body)
	}
	for _, urls := range [][]string{nil, {"ftp://photos.example.org/a.jpg"}, {"https://ana:secret@photos.example.org/a.jpg"}} {
		expect(t, a.do("POST", "/v1/projects/"+project+"/assets:import", key, map[string]any{"urls": urls}), 400, "validation_failed")
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/archive", key, nil), 200, "")
	expect(t, a.do("POST", "/v1/projects/"+project+"/assets:import", key, map[string]any{"urls": []string{"https://photos.example.org/b.jpg"}}),
		409, "project_not_active")
}
