package uploader_test

import (
	"testing"

	"lightbox/uploader"
)

func TestCleanKeepsWordsAndDropsWhatATerminalActsOn(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, with\ttab\nand newline":        "plain text, with\ttab\nand newline",
		"\x1b]0;new title\x07Hello":                 "Hello",                // OSC ended by BEL
		"\x1b]52;c;ZXZpbA==\x1b\\copied":            "copied",               // OSC ended by ESC \
		"\x1b[2J\x1b[1;31mred\x1b[0m":               "red",                  // CSI
		"\x1bPq#0;2;0;0;0\x1b\\after":               "after",                // DCS
		"\x1b(Bcharset \x1bcreset":                  "charset reset",        // two-byte escapes
		"bell\x07 back\bspace\rreturn\x7f":          "bell backspacereturn", // C0 and DEL
		"c1 \u009b31mcsi \u009d0;t\u009cosc \u0085": "c1 csi osc ",
		"bidi \u202egpj.exe\u202c \u2066iso\u2069":  "bidi gpj.exe iso",
		"unterminated \x1b]0;title to the very end": "unterminated ",
		"not utf-8 \xff\xfe":                        "not utf-8 \uFFFD",
		"a trailing escape \x1b":                    "a trailing escape ",
		"accents é and emoji 📷 stay":                "accents é and emoji 📷 stay",
	} {
		if got := uploader.Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
