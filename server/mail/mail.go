// Package mail provides the sending of Lightbox's few mails (sign-in
// codes): through an SMTP server, or, in development, into the log.
package mail

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// Sender sends one plain-text mail.
type Sender interface {
	Send(ctx context.Context, to, subject, body string) error
}

// New is the sender smtpURL names (smtp://[user:password@]host:port), or,
// when it is empty, one that writes each mail to log.
func New(smtpURL, from string, log *slog.Logger) (Sender, error) {
	if smtpURL == "" {
		return logSender{log}, nil
	}
	u, err := url.Parse(smtpURL)
	if err != nil || u.Scheme != "smtp" || u.Host == "" {
		return nil, fmt.Errorf("mail: %q is not smtp://host:port", smtpURL)
	}
	addr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("mail: from %q: %w", from, err)
	}
	s := &SMTP{addr: u.Host, from: addr}
	if u.User != nil {
		pass, _ := u.User.Password()
		s.auth = smtp.PlainAuth("", u.User.Username(), pass, u.Hostname())
	}
	return s, nil
}

// SMTP sends through one SMTP server, with STARTTLS when it offers it.
type SMTP struct {
	addr string
	from *mail.Address
	auth smtp.Auth
}

// Send implements Sender.
func (s *SMTP) Send(ctx context.Context, to, subject, body string) error {
	rcpt, err := mail.ParseAddress(to)
	if err != nil {
		return fmt.Errorf("mail: to %q: %w", to, err)
	}
	msg := strings.Join([]string{
		"From: " + s.from.String(),
		"To: " + rcpt.String(),
		"Subject: " + mime.QEncoding.Encode("utf-8", subject), // unchanged when plain ASCII
		"Date: " + time.Now().Format(time.RFC1123Z),
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		"Content-Transfer-Encoding: 8bit",
		"",
		strings.ReplaceAll(body, "\n", "\r\n"),
	}, "\r\n")
	// net/smtp has no context; a deadline on the connection stands in.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(s.addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("mail: %w", err)
	}
	defer c.Close()
	if err := s.send(c, host, rcpt.Address, []byte(msg)); err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	return c.Quit()
}

// send speaks the SMTP conversation of one mail on c, an open connection
// to host.
func (s *SMTP) send(c *smtp.Client, host, to string, msg []byte) error {
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if s.auth != nil {
		if err := c.Auth(s.auth); err != nil {
			return err
		}
	}
	if err := c.Mail(s.from.Address); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	return w.Close()
}

// logSender writes mails to the log, for development without SMTP.
type logSender struct{ log *slog.Logger }

func (l logSender) Send(ctx context.Context, to, subject, body string) error {
	l.log.InfoContext(ctx, "mail not sent: no SMTP_URL; here it is", "to", to, "subject", subject, "body", body)
	return nil
}
