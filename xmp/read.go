// Package xmp reads a photographer's decisions and captions from an XMP
// packet, embedded in a photo or in a sidecar file: the rating, reject,
// pick and colour label that Lightroom, Bridge, Photo Mechanic, Capture
// One, darktable and digiKam write, the keywords (flat and hierarchical)
// and the IPTC core captions. It also writes them back: Write merges them
// into a packet, keeping what it does not own, and EmbedJPEG and
// EmbedTIFF put a packet into a JPEG, TIFF or DNG without touching its
// image data.
//
// A packet is untrusted input. Read expands no entity and reads nothing
// a DOCTYPE names; it refuses a packet over MaxPacket bytes, nested
// deeper than maxDepth, or not well-formed, with an error that says why,
// so the photo can be taken as if it had no packet.
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
)

// MaxPacket is the largest packet or sidecar read, in bytes.
const MaxPacket = 1 << 20

// maxDepth bounds element nesting; real packets nest under ten deep.
const maxDepth = 64

// Colour labels, as Lightbox names them.
var colorLabels = []string{"red", "yellow", "green", "blue", "purple"}

// Decisions are what a packet says of a photo.
type Decisions struct {
	// Rating is 1–5 stars, or 0 when the packet gives none.
	Rating int `json:"rating"`
	// Rejected is xmp:Rating -1, or digiKam's reject pick label.
	Rejected bool `json:"rejected"`
	// Picked is digiKam's accepted pick label.
	Picked bool `json:"picked"`
	// ColorLabel is one of red, yellow, green, blue, purple, or "".
	ColorLabel string `json:"colorLabel"`
	// Keywords are dc:subject and the leaves of lr:hierarchicalSubject,
	// each once, in the packet's order.
	Keywords []string `json:"keywords"`
	// IPTC holds the captions.
	IPTC IPTC `json:"iptc"`
}

// IPTC are the IPTC core captions, named as the API names them.
type IPTC struct {
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	Creator      string `json:"creator,omitempty"`
	Copyright    string `json:"copyright,omitempty"`
	Headline     string `json:"headline,omitempty"`
	City         string `json:"city,omitempty"`
	State        string `json:"state,omitempty"`
	Country      string `json:"country,omitempty"`
	Credit       string `json:"credit,omitempty"`
	Source       string `json:"source,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	Location     string `json:"location,omitempty"`
}

// Namespaces of the properties read.
const (
	nsRDF       = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsXMP       = "http://ns.adobe.com/xap/1.0/"
	nsDC        = "http://purl.org/dc/elements/1.1/"
	nsLR        = "http://ns.adobe.com/lightroom/1.0/"
	nsPhotoshop = "http://ns.adobe.com/photoshop/1.0/"
	nsIPTCCore  = "http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
	nsDigiKam   = "http://www.digikam.org/ns/1.0/"
)

// properties are the properties read, by name.
var properties = map[xml.Name]bool{
	{Space: nsXMP, Local: "Rating"}:             true,
	{Space: nsXMP, Local: "Label"}:              true,
	{Space: nsDigiKam, Local: "PickLabel"}:      true,
	{Space: nsDigiKam, Local: "ColorLabel"}:     true,
	{Space: nsDC, Local: "subject"}:             true,
	{Space: nsLR, Local: "hierarchicalSubject"}: true,
	{Space: nsDC, Local: "title"}:               true,
	{Space: nsDC, Local: "description"}:         true,
	{Space: nsDC, Local: "creator"}:             true,
	{Space: nsDC, Local: "rights"}:              true,
	{Space: nsPhotoshop, Local: "Headline"}:     true,
	{Space: nsPhotoshop, Local: "City"}:         true,
	{Space: nsPhotoshop, Local: "State"}:        true,
	{Space: nsPhotoshop, Local: "Country"}:      true,
	{Space: nsPhotoshop, Local: "Credit"}:       true,
	{Space: nsPhotoshop, Local: "Source"}:       true,
	{Space: nsPhotoshop, Local: "Instructions"}: true,
	{Space: nsIPTCCore, Local: "Location"}:      true,
}

// ErrRefused is the error of a packet Read does not read at all.
var ErrRefused = errors.New("xmp packet refused")

// Read reads packet. A packet it cannot trust (too large, too deep, a
// DOCTYPE, not well-formed XML) gives an error wrapping ErrRefused and no
// decisions. Values out of range (a rating of 9 or "abc") are left out
// and named in warnings; the rest is read.
func Read(packet []byte) (d Decisions, warnings []string, err error) {
	if len(packet) > MaxPacket {
		return Decisions{}, nil, fmt.Errorf("%w: %d bytes, more than %d", ErrRefused, len(packet), MaxPacket)
	}
	props, err := parse(packet)
	if err != nil {
		return Decisions{}, nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	get := func(space, local string) []string { return props[xml.Name{Space: space, Local: local}] }
	first := func(space, local string) string {
		if v := get(space, local); len(v) > 0 {
			return v[0]
		}
		return ""
	}

	if s := first(nsXMP, "Rating"); s != "" {
		switch r, err := strconv.ParseFloat(s, 64); {
		case err != nil || r != float64(int(r)) || r < -1 || r > 5:
			warnings = append(warnings, fmt.Sprintf("xmp:Rating %q is not a whole number from -1 to 5", s))
		case r == -1:
			d.Rejected = true
		default:
			d.Rating = int(r)
		}
	}
	switch s := first(nsDigiKam, "PickLabel"); s {
	case "", "0", "2": // none, pending
	case "1":
		d.Rejected = true
	case "3":
		d.Picked = !d.Rejected
	default:
		warnings = append(warnings, fmt.Sprintf("digiKam:PickLabel %q is not 0 to 3", s))
	}
	if s := first(nsXMP, "Label"); s != "" {
		if l := strings.ToLower(s); slices.Contains(colorLabels, l) {
			d.ColorLabel = l
		}
		// Other labels (Bridge's "Approved", "To Do") are not colours.
	}
	if s := first(nsDigiKam, "ColorLabel"); s != "" && d.ColorLabel == "" {
		// digiKam numbers its labels: 1 red, 2 orange, 3 yellow, 4 green,
		// 5 blue, 6 magenta, 7 grey, 8 black, 9 white.
		switch s {
		case "1":
			d.ColorLabel = "red"
		case "3":
			d.ColorLabel = "yellow"
		case "4":
			d.ColorLabel = "green"
		case "5":
			d.ColorLabel = "blue"
		case "6":
			d.ColorLabel = "purple"
		}
	}

	for _, k := range get(nsDC, "subject") {
		d.Keywords = appendKeyword(d.Keywords, k)
	}
	for _, h := range get(nsLR, "hierarchicalSubject") {
		d.Keywords = appendKeyword(d.Keywords, h[strings.LastIndexByte(h, '|')+1:])
	}

	d.IPTC = IPTC{
		Title:        first(nsDC, "title"),
		Description:  first(nsDC, "description"),
		Creator:      strings.Join(get(nsDC, "creator"), "; "),
		Copyright:    first(nsDC, "rights"),
		Headline:     first(nsPhotoshop, "Headline"),
		City:         first(nsPhotoshop, "City"),
		State:        first(nsPhotoshop, "State"),
		Country:      first(nsPhotoshop, "Country"),
		Credit:       first(nsPhotoshop, "Credit"),
		Source:       first(nsPhotoshop, "Source"),
		Instructions: first(nsPhotoshop, "Instructions"),
		Location:     first(nsIPTCCore, "Location"),
	}
	return d, warnings, nil
}

func appendKeyword(ks []string, k string) []string {
	if k = strings.TrimSpace(k); k == "" || slices.Contains(ks, k) {
		return ks
	}
	return append(ks, k)
}

// parse returns the values of the properties read, in the two forms RDF
// gives them: an attribute of rdf:Description, or an element holding text
// or an rdf:Bag, rdf:Seq or rdf:Alt of rdf:li. An rdf:Alt's x-default
// item comes first. The first occurrence of a property wins.
func parse(packet []byte) (map[xml.Name][]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(packet))
	dec.Strict = true // an undefined entity is an error, never expanded
	props := map[xml.Name][]string{}
	var (
		depth   int
		cur     *xml.Name // the property element open, if any
		curAt   int       // its depth
		text    strings.Builder
		items   []string
		inItem  bool
		deflt   bool // the open rdf:li is an rdf:Alt's x-default
		hasDflt bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if depth != 0 {
				return nil, errors.New("the packet ends inside an element")
			}
			return props, nil
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.Directive:
			return nil, errors.New("a packet may not hold a DOCTYPE or other directive")
		case xml.StartElement:
			if depth++; depth > maxDepth {
				return nil, fmt.Errorf("elements nested more than %d deep", maxDepth)
			}
			for _, a := range t.Attr {
				if properties[a.Name] && props[a.Name] == nil {
					props[a.Name] = []string{a.Value}
				}
			}
			switch {
			case cur == nil && properties[t.Name] && props[t.Name] == nil:
				name := t.Name
				cur, curAt = &name, depth
				text.Reset()
				items, hasDflt = nil, false
			case cur != nil && t.Name == xml.Name{Space: nsRDF, Local: "li"}:
				inItem, deflt = true, false
				text.Reset()
				for _, a := range t.Attr {
					if a.Name.Local == "lang" && a.Value == "x-default" {
						deflt = true
					}
				}
			}
		case xml.CharData:
			if cur != nil {
				text.Write(t)
			}
		case xml.EndElement:
			switch {
			case cur != nil && inItem && t.Name == xml.Name{Space: nsRDF, Local: "li"}:
				v := strings.TrimSpace(text.String())
				if deflt && !hasDflt {
					items, hasDflt = append([]string{v}, items...), true
				} else {
					items = append(items, v)
				}
				inItem = false
				text.Reset()
			case cur != nil && depth == curAt:
				if items == nil {
					if v := strings.TrimSpace(text.String()); v != "" {
						items = []string{v}
					}
				}
				props[*cur] = items
				cur = nil
			}
			depth--
		}
	}
}
