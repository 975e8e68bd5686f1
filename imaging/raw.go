package imaging

// inspectRaw reads what a camera raw's header says.
func inspectRaw(data []byte, h *header) error {
	return newError(CodeUnsupportedFormat, nil, "the file is a camera raw (%s), which this version does not read", h.format)
}
