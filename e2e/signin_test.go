package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"lightbox/testsupport/testenv"
)

// TestSignInWithAMailedCode is a photographer signing in to the app as a
// person: their email, the code the mail brings, "keep me signed in";
// the projects page follows, and the API key form stays beside it for
// scripts and operators.
func TestSignInWithAMailedCode(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, "signin-stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	smtpURL, mails := testenv.SMTP(t)
	s := startStack(t, logFile, map[string]string{"SMTP_URL": smtpURL, "MAIL_FROM": "lightbox@example.org"})
	s.user("ana@example.org", false)

	b := newBrowser(t, chrome)
	b.run("open the app", chromedp.Navigate(s.url), chromedp.WaitVisible(chromedp.CSS("#signin-email")), chromedp.WaitVisible(chromedp.CSS("#api-key")))
	b.shot("signin-01-forms")
	b.run("ask for a code", chromedp.SendKeys(chromedp.CSS("#signin-email"), "ana@example.org"), chromedp.Click(chromedp.CSS("#signin-send")))
	b.run("the code field", chromedp.WaitVisible(chromedp.CSS("#signin-code")))
	var code string
	select {
	case m := <-mails:
		match := regexp.MustCompile(`sign-in code is (\d{6})\.`).FindStringSubmatch(m.Data)
		if match == nil {
			t.Fatalf("no code in the mail:\n%s", m.Data)
		}
		code = match[1]
	case <-time.After(patience):
		t.Fatal("no sign-in mail arrived")
	}
	b.run("enter the code, kept", chromedp.SendKeys(chromedp.CSS("#signin-code"), code),
		chromedp.Click(chromedp.CSS("#signin-keep")), chromedp.Click(chromedp.CSS("#signin-send")))
	b.waitJS("signed in", `document.querySelector('#sign-out') !== null && document.body.innerText.includes('ana@example.org')`)
	b.shot("signin-02-signed-in")
}
