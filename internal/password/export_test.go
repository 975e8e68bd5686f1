package password

// Hold takes a slot as a running hash would, until release is called.
func (p *Pool) Hold() (release func()) {
	p.slots <- struct{}{}
	return p.give
}
