package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape, parsed by Prometheus' own text parser.
type Metrics map[string]*dto.MetricFamily

// Has reports whether the scrape has the series name: a family, or the
// _bucket, _count or _sum series of a histogram family.
func (m Metrics) Has(name string) bool {
	if m[name] != nil {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && m[base].GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// Scrape GETs a /metrics URL with the Authorization header given (none when
// empty) and parses the answer, failing t unless it is a 200 in the text
// format.
func Scrape(t testing.TB, url, authorization string) Metrics {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("scrape %s: status %d: %s", url, res.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return m
}

// Value sums the samples of the family name whose labels include all of
// want: a counter's or gauge's value, a histogram's count of observations.
func (m Metrics) Value(name string, want map[string]string) float64 {
	f := m[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, s := range f.GetMetric() {
		if !hasLabels(s, want) {
			continue
		}
		switch {
		case s.Counter != nil:
			sum += s.Counter.GetValue()
		case s.Gauge != nil:
			sum += s.Gauge.GetValue()
		case s.Histogram != nil:
			sum += float64(s.Histogram.GetSampleCount())
		case s.Untyped != nil:
			sum += s.Untyped.GetValue()
		}
	}
	return sum
}

// LabelValues lists the values label takes in the family name.
func (m Metrics) LabelValues(name, label string) []string {
	var out []string
	for _, s := range m[name].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == label {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}

func hasLabels(s *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range s.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}
