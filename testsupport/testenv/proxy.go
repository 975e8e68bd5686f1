package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards a loopback address to a real service and can cut it off
// and bring it back on the same address: the service going down as its
// clients see it, without stopping what other tests share.
type Proxy struct {
	t      testing.TB
	Addr   string // where clients connect, host:port
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

// NewProxy forwards a new loopback port to target (host:port) until t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, Addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

// Down closes the port and every connection through it: new connections
// are refused, open ones end.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Up listens again on the same address.
func (p *Proxy) Up() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		p.t.Fatalf("listen again on %s: %v", p.Addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			if !p.track(in, out) {
				continue
			}
			go p.pipe(in, out)
			go p.pipe(out, in)
		}
	}()
}

// track records a pair of connections, or closes them when the proxy went
// down meanwhile.
func (p *Proxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		in.Close()
		out.Close()
		return false
	}
	p.conns[in], p.conns[out] = true, true
	return true
}

func (p *Proxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}
