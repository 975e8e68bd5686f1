package testenv

import (
	"io"
	"net"
	"testing"

	"github.com/emersion/go-smtp"
)

// Mail is one message an SMTP listener received.
type Mail struct {
	From string
	To   []string
	Data string // headers and body, as sent
}

// SMTP starts an SMTP server on loopback for the test and returns its
// smtp:// URL and the mails it receives.
func SMTP(t testing.TB) (string, <-chan Mail) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mails := make(chan Mail, 100)
	srv := smtp.NewServer(smtpBackend(func(m Mail) { mails <- m }))
	srv.Domain = "localhost"
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "smtp://" + ln.Addr().String(), mails
}

type smtpBackend func(Mail)

func (b smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{deliver: b}, nil
}

type smtpSession struct {
	deliver func(Mail)
	m       Mail
}

func (s *smtpSession) Reset()        { s.m = Mail{} }
func (s *smtpSession) Logout() error { return nil }

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	s.m.From = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.m.To = append(s.m.To, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.m.Data = string(b)
	s.deliver(s.m)
	return nil
}
