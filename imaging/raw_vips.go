//go:build cgo

package imaging

func (e *vipsEngine) readRawHeader(data []byte, h *header) error {
	return newError(CodeUnsupportedFormat, nil, "camera raws are not read yet")
}
