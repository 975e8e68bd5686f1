package uploader

import (
	"strings"
	"unicode/utf8"
)

// Clean returns text a server sent without what a terminal would act on
// rather than show: escape sequences whole (a title change, a clipboard
// write, a screen clear), every other C0 control but newline and tab,
// every C1 control with the sequence it opens, and the Unicode controls
// that reorder what follows (bidi overrides and isolates), which can make
// a line read as something else. Bytes that are not UTF-8 become U+FFFD.
//
// Written here rather than taken from a library: the ANSI strippers drop
// well-formed sequences only, not stray controls, C1 or bidi controls.
func Clean(s string) string {
	if isPlain(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == 0x1b: // ESC: the sequence it opens goes with it
			i = skipEscape(s, i)
		case r == 0x9b: // CSI
			i = skipCSI(s, i)
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // DCS, SOS, OSC, PM, APC
			i = skipString(s, i)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || reorders(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII, newlines and tabs only.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// reorders reports the Unicode controls of bidirectional text: marks,
// embeddings, overrides and isolates.
func reorders(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// skipEscape returns where the sequence ESC opened ends, from i just
// after the ESC.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// ESC, intermediates (0x20-0x2f), one final byte (0x30-0x7e).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI returns where a control sequence ends: parameters (0x30-0x3f),
// intermediates (0x20-0x2f), then one final byte (0x40-0x7e).
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns where a command string (OSC, DCS, SOS, PM, APC) ends:
// after BEL, ESC \ or the C1 string terminator, or at the end of s.
func skipString(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x07 || r == 0x9c:
			return i + n
		case r == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i // another sequence starts: it is read as one
		}
		i += n
	}
	return i
}
