package xmp

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// WriteOptions say how Write records what some editors cannot read.
type WriteOptions struct {
	// Pick says how a pick is written where the editor reads no pick flag.
	// "none" (default), "rating:N" (N 1–5: picks get at least N stars), or "label:COLOUR".
	// A label marks only picks without a colour label of their own.
	Pick string
}

// ParsePick validates a Pick setting, with an error naming what is wrong.
func ParsePick(s string) error {
	_, _, err := parsePick(s)
	return err
}

// parsePick returns the least rating or the colour label a pick gets.
func parsePick(s string) (rating int, label string, err error) {
	switch kind, arg, _ := strings.Cut(s, ":"); kind {
	case "", "none":
		if arg != "" {
			return 0, "", fmt.Errorf("pick %q: none takes no value", s)
		}
		return 0, "", nil
	case "rating":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > 5 {
			return 0, "", fmt.Errorf("pick %q: the rating must be 1 to 5", s)
		}
		return n, "", nil
	case "label":
		if l := strings.ToLower(arg); slices.Contains(colorLabels, l) {
			return 0, l, nil
		}
		return 0, "", fmt.Errorf("pick %q: the label must be one of %s", s, strings.Join(colorLabels, ", "))
	default:
		return 0, "", fmt.Errorf("pick %q: want none, rating:N or label:COLOUR", s)
	}
}

// Namespaces Write declares, with the prefixes editors give them.
var prefixes = map[string]string{
	nsRDF:       "rdf",
	nsXMP:       "xmp",
	nsDC:        "dc",
	nsLR:        "lr",
	nsPhotoshop: "photoshop",
	nsIPTCCore:  "Iptc4xmpCore",
	nsDigiKam:   "digiKam",
}

// digiKamColors numbers the colour labels as digiKam does; Read maps 6
// (magenta) to purple, so purple is written as 6.
var digiKamColors = map[string]string{"red": "1", "yellow": "3", "green": "4", "blue": "5", "purple": "6"}

// Forms of a property's value.
const (
	simple = iota
	bag
	seq
	alt
)

// property is an owned property as Write sets it.
type property struct {
	space, local string
	form         int
	values       []string
}

// emptyPacket is what Write merges into when there is no existing packet.
const emptyPacket = `<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:lr="http://ns.adobe.com/lightroom/1.0/"
    xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
    xmlns:Iptc4xmpCore="http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
    xmlns:digiKam="http://www.digikam.org/ns/1.0/">
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`

// Write returns an XMP packet holding d. With existing (a sidecar or an
// embedded packet the photo came with) it merges: every property Lightbox does
// not own is kept as it was (other namespaces, crs: develop settings,
// xmpMM:History, unknown elements and attributes, rdf:about); the owned ones are
// replaced by d's. A broken existing packet is an error (the caller decides).
//
// Owned are the properties Read reads, wherever Read would find them, so
// that Read gives back d. Kept content is copied byte for byte rather than
// re-encoded, which keeps its prefixes, entities and layout.
func Write(existing []byte, d Decisions, o WriteOptions) ([]byte, error) {
	pickRating, pickLabel, err := parsePick(o.Pick)
	if err != nil {
		return nil, err
	}
	if d.Rating < 0 || d.Rating > 5 {
		return nil, fmt.Errorf("rating %d is not 0 to 5", d.Rating)
	}
	if d.ColorLabel != "" && !slices.Contains(colorLabels, d.ColorLabel) {
		return nil, fmt.Errorf("colour label %q is not one of %s", d.ColorLabel, strings.Join(colorLabels, ", "))
	}
	if len(bytes.TrimSpace(existing)) == 0 {
		existing = []byte(emptyPacket)
	}
	if len(existing) > MaxPacket {
		return nil, fmt.Errorf("existing packet: %d bytes, more than %d", len(existing), MaxPacket)
	}
	if !utf8.Valid(existing) {
		return nil, errors.New("existing packet: invalid UTF-8")
	}
	// parse is Read's gate: no DOCTYPE, bounded depth, well-formed.
	old, err := parse(existing)
	if err != nil {
		return nil, fmt.Errorf("existing packet: %w", err)
	}
	if d.Picked && !d.Rejected {
		d.Rating = max(d.Rating, pickRating)
		if d.ColorLabel == "" {
			d.ColorLabel = pickLabel
		}
	}
	out, err := merge(existing, owned(d, old[xml.Name{Space: nsLR, Local: "hierarchicalSubject"}]))
	if err != nil {
		return nil, fmt.Errorf("existing packet: %w", err)
	}
	return out, nil
}

// owned returns the owned properties d sets, in the order written.
// hierarchy is the existing lr:hierarchicalSubject.
func owned(d Decisions, hierarchy []string) []property {
	var ps []property
	add := func(space, local string, form int, values ...string) {
		var vs []string
		for _, v := range values {
			if v = strings.TrimSpace(v); v != "" {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			ps = append(ps, property{space, local, form, vs})
		}
	}
	switch {
	case d.Rejected:
		add(nsXMP, "Rating", simple, "-1")
	case d.Rating > 0:
		add(nsXMP, "Rating", simple, strconv.Itoa(d.Rating))
	}
	if d.ColorLabel != "" {
		add(nsXMP, "Label", simple, strings.ToUpper(d.ColorLabel[:1])+d.ColorLabel[1:])
		add(nsDigiKam, "ColorLabel", simple, digiKamColors[d.ColorLabel])
	}
	switch {
	case d.Rejected:
		add(nsDigiKam, "PickLabel", simple, "1")
	case d.Picked:
		add(nsDigiKam, "PickLabel", simple, "3")
	default:
		add(nsDigiKam, "PickLabel", simple, "0")
	}

	var keywords []string
	for _, k := range d.Keywords {
		keywords = appendKeyword(keywords, k)
	}
	add(nsDC, "subject", bag, keywords...)
	// A hierarchical entry stays while its leaf is still a keyword; a
	// keyword no entry ends in gets a plain one. A keyword holding "|"
	// would read back as a path, so it gets none.
	var hier []string
	covered := map[string]bool{}
	for _, h := range hierarchy {
		leaf := strings.TrimSpace(h[strings.LastIndexByte(h, '|')+1:])
		if slices.Contains(keywords, leaf) && !slices.Contains(hier, h) {
			hier = append(hier, h)
			covered[leaf] = true
		}
	}
	for _, k := range keywords {
		if !covered[k] && !strings.Contains(k, "|") {
			hier = append(hier, k)
		}
	}
	add(nsLR, "hierarchicalSubject", bag, hier...)

	in := d.IPTC
	add(nsDC, "title", alt, in.Title)
	add(nsDC, "description", alt, in.Description)
	add(nsDC, "creator", seq, strings.Split(in.Creator, ";")...)
	add(nsDC, "rights", alt, in.Copyright)
	add(nsPhotoshop, "Headline", simple, in.Headline)
	add(nsPhotoshop, "City", simple, in.City)
	add(nsPhotoshop, "State", simple, in.State)
	add(nsPhotoshop, "Country", simple, in.Country)
	add(nsPhotoshop, "Credit", simple, in.Credit)
	add(nsPhotoshop, "Source", simple, in.Source)
	add(nsPhotoshop, "Instructions", simple, in.Instructions)
	add(nsIPTCCore, "Location", simple, in.Location)
	return ps
}

// frame is an open element of the packet being merged.
type frame struct {
	name     xml.Name
	raw      string            // its name as written, prefix and all
	ns       map[string]string // the prefixes it declares
	reopened bool              // written as <a> though the packet has <a/>
	target   bool              // the owned properties go at its end
	prefix   map[string]string // a target's prefixes, by namespace
	local    map[string]bool   // namespaces of a target not declared in scope
}

// merger copies a packet, leaving out owned properties and putting the
// new ones in the first top-level rdf:Description.
type merger struct {
	out      []byte
	props    []property
	stack    []frame
	pending  []byte // whitespace held back until what follows is known
	sawRDF   bool
	inserted bool
}

func merge(packet []byte, props []property) ([]byte, error) {
	m := &merger{out: make([]byte, 0, len(packet)+1024), props: props}
	dec := xml.NewDecoder(bytes.NewReader(packet))
	dec.Strict = true
	var (
		skip     int // depth in the owned element being left out, or 0
		sawBegin bool
		sawEnd   bool
		wrapped  bool // the root is rdf:RDF, given an x:xmpmeta here
		rootDone bool
	)
	for {
		startOffset := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		raw := packet[startOffset:dec.InputOffset()]
		if skip > 0 {
			switch tok.(type) {
			case xml.StartElement:
				skip++
			case xml.EndElement:
				skip--
			}
			continue
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(raw)) == 0 {
				m.pending = append(m.pending, raw...)
				continue
			}
		case xml.ProcInst:
			if t.Target == "xpacket" {
				if bytes.Contains(t.Inst, []byte("end=")) {
					sawEnd = true
				} else {
					sawBegin = true
				}
			}
		case xml.StartElement:
			if properties[t.Name] {
				m.pending = m.pending[:0]
				skip = 1
				continue
			}
			if len(m.stack) == 0 && !rootDone {
				m.flush()
				if !sawBegin {
					m.out = append(m.out, emptyPacket[:strings.Index(emptyPacket, "\n")+1]...)
				}
				if t.Name == (xml.Name{Space: nsRDF, Local: "RDF"}) {
					wrapped = true
					m.out = append(m.out, "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n"...)
				}
			}
			if err := m.start(t, raw); err != nil {
				return nil, err
			}
			continue
		case xml.EndElement:
			m.end(raw)
			if len(m.stack) == 0 && !rootDone {
				rootDone = true
				if wrapped {
					m.out = append(m.out, "\n</x:xmpmeta>"...)
				}
			}
			continue
		}
		m.flush()
		m.out = append(m.out, raw...)
	}
	if !m.inserted {
		return nil, errors.New("no rdf:RDF element")
	}
	m.flush()
	if !sawEnd {
		m.out = append(m.out, "\n<?xpacket end=\"w\"?>"...)
	}
	return m.out, nil
}

func (m *merger) flush() {
	m.out = append(m.out, m.pending...)
	m.pending = m.pending[:0]
}

// start copies a start tag, less any owned attributes; the first rdf:RDF
// and the first rdf:Description in it become targets.
func (m *merger) start(t xml.StartElement, raw []byte) error {
	m.flush()
	f := frame{name: t.Name, ns: map[string]string{}}
	for _, a := range t.Attr {
		switch {
		case a.Name.Space == "xmlns":
			f.ns[a.Name.Local] = a.Value
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			f.ns[""] = a.Value
		}
	}
	rdf := func(local string) xml.Name { return xml.Name{Space: nsRDF, Local: local} }
	switch {
	case !m.sawRDF && t.Name == rdf("RDF"):
		m.sawRDF = true
		f.target = true
	case !m.inserted && t.Name == rdf("Description") && len(m.stack) > 0 &&
		m.stack[len(m.stack)-1].target && m.stack[len(m.stack)-1].name == rdf("RDF"):
		// The properties go here, not in a description of their own.
		m.stack[len(m.stack)-1].target = false
		f.target = true
	}
	if f.target {
		scope := m.scope()
		for k, v := range f.ns {
			scope[k] = v
		}
		f.prefix, f.local = choosePrefixes(scope, m.props)
	}
	selfClosing := bytes.HasSuffix(raw, []byte("/>"))
	dropped := false
	for _, a := range t.Attr {
		dropped = dropped || properties[a.Name]
	}
	if !dropped && !(f.target && selfClosing) {
		f.raw = rawName(raw)
		m.stack = append(m.stack, f)
		m.out = append(m.out, raw...)
		return nil
	}
	tag, err := scanTag(raw)
	if err != nil {
		return err
	}
	if len(tag.attrs) != len(t.Attr) {
		return fmt.Errorf("start tag %s: %d attributes, read %d", tag.name, len(tag.attrs), len(t.Attr))
	}
	f.raw = tag.name
	m.out = append(m.out, '<')
	m.out = append(m.out, tag.name...)
	for i, a := range tag.attrs {
		if !properties[t.Attr[i].Name] {
			m.out = append(m.out, a...)
		}
	}
	tail := tag.tail
	if f.target && selfClosing {
		tail = strings.TrimSuffix(tail, "/>") + ">"
		f.reopened = true
	}
	m.stack = append(m.stack, f)
	m.out = append(m.out, tail...)
	return nil
}

// end closes the open element, first writing the owned properties into it
// when it is the target.
func (m *merger) end(raw []byte) {
	f := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	if f.target {
		indent := " "
		if i := bytes.LastIndexByte(m.pending, '\n'); i >= 0 {
			indent = string(m.pending[i+1:]) + " "
		}
		if f.name.Local == "RDF" {
			// No rdf:Description at all: one is made.
			r := f.prefix[nsRDF]
			m.out = append(m.out, "\n"+indent+"<"+r+":Description "+r+`:about=""`...)
			for _, ns := range namespaces {
				if f.local[ns] {
					m.declare(f.prefix, ns)
				}
			}
			m.out = append(m.out, '>')
			m.writeProps(f.prefix, nil, indent+" ")
			m.out = append(m.out, "\n"+indent+"</"+r+":Description>"...)
		} else {
			m.writeProps(f.prefix, f.local, indent)
		}
		m.inserted = true
	}
	m.flush()
	if f.reopened {
		m.out = append(m.out, "</"+f.raw+">"...)
		return
	}
	m.out = append(m.out, raw...)
}

// scope returns the prefixes declared where the next element opens.
func (m *merger) scope() map[string]string {
	s := map[string]string{"xml": "http://www.w3.org/XML/1998/namespace"}
	for _, f := range m.stack {
		for k, v := range f.ns {
			s[k] = v
		}
	}
	return s
}

// namespaces are those of the properties written, in a fixed order.
var namespaces = []string{nsRDF, nsXMP, nsDC, nsLR, nsPhotoshop, nsIPTCCore, nsDigiKam}

// choosePrefixes picks a prefix for each namespace props use, and rdf's:
// one scope binds to it or, with none, its usual one, which local says
// is to be declared. The declarations go on the elements written, never
// on one of the packet's: there they could bind a prefix the packet uses
// undeclared.
func choosePrefixes(scope map[string]string, props []property) (chosen map[string]string, local map[string]bool) {
	chosen, local = map[string]string{}, map[string]bool{}
	for _, ns := range namespaces {
		if ns != nsRDF && !slices.ContainsFunc(props, func(p property) bool { return p.space == ns }) {
			continue
		}
		std := prefixes[ns]
		if scope[std] == ns {
			chosen[ns] = std
			continue
		}
		var found []string
		for p, v := range scope {
			if v == ns && isName(p) {
				found = append(found, p)
			}
		}
		if len(found) > 0 {
			slices.Sort(found) // the same output every time
			chosen[ns] = found[0]
			continue
		}
		chosen[ns], local[ns] = std, true
	}
	return chosen, local
}

// isName reports whether a prefix the packet declares can name elements;
// encoding/xml lets through some that cannot.
func isName(p string) bool {
	for i, r := range p {
		if !unicode.IsLetter(r) && r != '_' && (i == 0 || !unicode.IsDigit(r) && r != '-' && r != '.') {
			return false
		}
	}
	return p != ""
}

func (m *merger) declare(prefix map[string]string, ns string) {
	m.out = fmt.Appendf(m.out, " xmlns:%s=%q", prefix[ns], ns)
}

// writeProps writes the owned properties as elements, each on a line,
// declaring the namespaces local names.
func (m *merger) writeProps(p map[string]string, local map[string]bool, indent string) {
	r := p[nsRDF]
	for _, pr := range m.props {
		name := p[pr.space] + ":" + pr.local
		m.out = append(m.out, "\n"+indent+"<"+name...)
		if local[pr.space] {
			m.declare(p, pr.space)
		}
		if pr.form != simple && local[nsRDF] {
			m.declare(p, nsRDF)
		}
		m.out = append(m.out, '>')
		if pr.form == simple {
			m.out = escape(m.out, pr.values[0])
			m.out = append(m.out, "</"+name+">"...)
			continue
		}
		container := map[int]string{bag: "Bag", seq: "Seq", alt: "Alt"}[pr.form]
		m.out = append(m.out, "\n"+indent+" <"+r+":"+container+">"...)
		for _, v := range pr.values {
			m.out = append(m.out, "\n"+indent+"  <"+r+":li"...)
			if pr.form == alt {
				m.out = append(m.out, ` xml:lang="x-default"`...)
			}
			m.out = append(m.out, '>')
			m.out = escape(m.out, v)
			m.out = append(m.out, "</"+r+":li>"...)
		}
		m.out = append(m.out, "\n"+indent+" </"+r+":"+container+">\n"+indent+"</"+name+">"...)
	}
}

// escape appends s as XML text; characters XML cannot hold become U+FFFD.
func escape(b []byte, s string) []byte {
	var w bytes.Buffer
	xml.EscapeText(&w, []byte(s)) //nolint:errcheck // a bytes.Buffer does not fail
	return append(b, w.Bytes()...)
}

// rawName returns the name of a start tag as written.
func rawName(raw []byte) string {
	end := bytes.IndexAny(raw[1:], " \t\r\n/>")
	return string(raw[1 : end+1])
}

// tag is a start tag cut into its name, its attributes (each with the
// space before it) and the rest ("/>", ">" and any space before).
type tag struct {
	name  string
	attrs [][]byte
	tail  string
}

// scanTag cuts a start tag the decoder has already found well-formed.
func scanTag(raw []byte) (tag, error) {
	t := tag{name: rawName(raw)}
	i := 1 + len(t.name)
	for {
		j := i
		for j < len(raw) && isSpace(raw[j]) {
			j++
		}
		if j >= len(raw) {
			return tag{}, fmt.Errorf("start tag %s cut short", t.name)
		}
		if raw[j] == '/' || raw[j] == '>' {
			t.tail = string(raw[i:])
			return t, nil
		}
		eq := bytes.IndexByte(raw[j:], '=')
		if eq < 0 {
			return tag{}, fmt.Errorf("start tag %s: an attribute without a value", t.name)
		}
		q := j + eq + 1
		for q < len(raw) && isSpace(raw[q]) {
			q++
		}
		if q >= len(raw) || (raw[q] != '"' && raw[q] != '\'') {
			return tag{}, fmt.Errorf("start tag %s: an unquoted attribute", t.name)
		}
		close := bytes.IndexByte(raw[q+1:], raw[q])
		if close < 0 {
			return tag{}, fmt.Errorf("start tag %s: an unclosed attribute", t.name)
		}
		end := q + 1 + close + 1
		t.attrs = append(t.attrs, raw[i:end])
		i = end
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
