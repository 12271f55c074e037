// Package metricstext reads what the service serves on /metrics (the
// Prometheus text format) for the tests and the lab, through the parser
// Prometheus itself uses (expfmt), so a reader of the figures never trips
// over escaping, histograms or a line longer than a scanner's buffer.
package metricstext

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Exposition is one scrape: the families' types and every sample line.
type Exposition struct {
	Types   map[string]string // family → counter, gauge, histogram, summary, untyped
	Samples []Sample
}

// Sample is one line of the text format: a histogram or summary family
// gives several (_bucket, _sum, _count, quantiles).
type Sample struct {
	Name   string
	Labels []Label // in the order the line writes them (le, quantile last)
	Value  float64
}

// Label is one name="value" of a sample.
type Label struct{ Name, Value string }

// Parse reads one scrape in the text format.
func Parse(r io.Reader) (Exposition, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Exposition{}, fmt.Errorf("parse metrics: %w", err)
	}
	if len(fams) == 0 {
		return Exposition{}, errors.New("parse metrics: no metric families")
	}
	e := Exposition{Types: map[string]string{}}
	for name, mf := range fams {
		e.Types[name] = strings.ToLower(mf.GetType().String())
		for _, m := range mf.GetMetric() {
			e.Samples = append(e.Samples, samples(name, mf.GetType(), m)...)
		}
	}
	return e, nil
}

// Values returns the samples whose name starts with prefix, keyed as
// their lines write them: name{labels}.
func (e Exposition) Values(prefix string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range e.Samples {
		if strings.HasPrefix(s.Name, prefix) {
			out[s.Key()] = s.Value
		}
	}
	return out
}

// Key is the sample's name and labels as the text format writes them:
// stampede_lock_events_total{event="contended"}.
func (s Sample) Key() string {
	if len(s.Labels) == 0 {
		return s.Name
	}
	var b strings.Builder
	b.WriteString(s.Name)
	b.WriteByte('{')
	for i, l := range s.Labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(escape.Replace(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var escape = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// samples expands one metric into the lines the text format gives it.
func samples(name string, typ dto.MetricType, m *dto.Metric) []Sample {
	labels := make([]Label, 0, len(m.GetLabel())+1)
	for _, lp := range m.GetLabel() {
		labels = append(labels, Label{lp.GetName(), lp.GetValue()})
	}
	with := func(name, value string) []Label {
		return append(labels[:len(labels):len(labels)], Label{name, value})
	}
	switch typ {
	case dto.MetricType_COUNTER:
		return []Sample{{name, labels, m.GetCounter().GetValue()}}
	case dto.MetricType_GAUGE:
		return []Sample{{name, labels, m.GetGauge().GetValue()}}
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		var out []Sample
		for _, q := range s.GetQuantile() {
			out = append(out, Sample{name, with("quantile", formatFloat(q.GetQuantile())), q.GetValue()})
		}
		return append(out,
			Sample{name + "_sum", labels, s.GetSampleSum()},
			Sample{name + "_count", labels, float64(s.GetSampleCount())})
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		var out []Sample
		for _, b := range h.GetBucket() {
			out = append(out, Sample{name + "_bucket", with("le", formatFloat(b.GetUpperBound())), count(b.GetCumulativeCount(), b.GetCumulativeCountFloat())})
		}
		return append(out,
			Sample{name + "_sum", labels, h.GetSampleSum()},
			Sample{name + "_count", labels, count(h.GetSampleCount(), h.GetSampleCountFloat())})
	default:
		return []Sample{{name, labels, m.GetUntyped().GetValue()}}
	}
}

// count is a histogram count the parser kept as an integer or a float.
func count(n uint64, f float64) float64 {
	if f != 0 {
		return f
	}
	return float64(n)
}

// formatFloat writes an le or quantile value as client_golang does.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
