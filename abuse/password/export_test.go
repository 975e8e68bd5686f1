package password

import "context"

// Hold takes a slot for key as a running hash would, waiting its turn in
// line if need be, until release is called.
func (p *Pool) Hold(ctx context.Context, key string) (release func(), err error) {
	l, err := p.take(ctx, key)
	if err != nil {
		return nil, err
	}
	return func() { p.give(l) }, nil
}
